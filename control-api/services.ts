// Owns the set of services the control-plane routes receive (wired in bin/, injected here; no globals).
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { AccountStore } from '../storage/accounts.js';
import type { InboundDomainStore } from '../storage/inbound-domains.js';
import type { InboundListStore } from '../storage/inbound-lists.js';
import type { InboundReportStore } from '../storage/inbound-reports.js';
import type { SmtpLogStore } from '../storage/smtp-log.js';
import type { SuppressionStore } from '../storage/suppressions.js';
import type { DkimKeyStore } from '../storage/dkim-keys.js';

/** Health of the parts /healthz reports on. */
export interface HealthReport {
  storage: boolean;
  listeners: Record<string, boolean>;
}

export interface Services {
  config: Config;
  accounts: AccountStore;
  /** The SMTP log: the queue writes it, POST /outbound/v1/search reads it. */
  smtpLog: SmtpLogStore;
  /** Suppression list: the API manages it, every send checks it. */
  suppressions: SuppressionStore;
  /** DKIM keys per account and domain. */
  dkim: DkimKeyStore;
  /** Inbound domains, aliases, downstreams and subscriptions (the MX reads them too). */
  inboundDomains: InboundDomainStore;
  /** Inbound safelist/blocklist entries at account, domain and recipient level. */
  inboundLists: InboundListStore;
  /** False positive / negative reports for the operator. */
  inboundReports: InboundReportStore;
  /** Injected clock (ms since epoch). */
  now: () => number;
  logger: Logger;
  health: () => HealthReport;
}
