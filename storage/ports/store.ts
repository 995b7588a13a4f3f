// Owns the Store: every port of the storage seam, as one object that storage/open.ts returns and bin/ hands out.
import type { AccountStore } from './accounts.js';
import type { AlertStore } from './alerts.js';
import type { AuditStore } from './audit.js';
import type { BayesStore } from './bayes.js';
import type { BodyStore } from './bodies.js';
import type { ConsoleStore } from './console.js';
import type { DkimKeyStore } from './dkim-keys.js';
import type { GreylistStore } from './greylist.js';
import type { HealthStore } from './health.js';
import type { InboundDomainStore } from './inbound-domains.js';
import type { JobLeadStore } from './job-leads.js';
import type { InboundListStore } from './inbound-lists.js';
import type { InboundLogStore } from './inbound-log.js';
import type { InboundRecipientStore } from './inbound-recipients.js';
import type { InboundReportStore } from './inbound-reports.js';
import type { LockdownStore } from './lockdown.js';
import type { MetricStore } from './metrics.js';
import type { QuarantineStore } from './quarantine.js';
import type { QuarantineDigestStore } from './quarantine-digests.js';
import type { QueueStore } from './queue.js';
import type { QueueViewStore } from './queue-views.js';
import type { RetentionStore } from './retention.js';
import type { SenderAbuseStore } from './sender-abuse.js';
import type { SendLimitStore } from './send-limits.js';
import type { SettingStore } from './settings.js';
import type { SmtpLogStore } from './smtp-log.js';
import type { SuppressionStore } from './suppressions.js';
import type { ThrottleStore } from './throttles.js';
import type { TlsReportStore } from './tls-reports.js';
import type { TotpStore } from './totp.js';
import type { ShapingStore } from './shaping.js';
import type { ConnectionSlotStore } from './connection-slots.js';
import type { TrackingStore } from './tracking.js';
import type { TrackingDomainStore } from './tracking-domains.js';
import type { WebhookStore } from './webhooks.js';

/**
 * The storage seam (ARCHITECTURE: one asynchronous seam, two backends). Everything outside storage/ reaches storage
 * only through these ports; each method returns a promise and is one atomic unit of work. No caller sees a
 * transaction, SQL, a connection or the order of row ids. A part of Sluice receives the ports it uses, not the Store.
 */
export interface Store {
  /** Accounts, sub-accounts, API keys, SMTP passwords, monthly usage. */
  readonly accounts: AccountStore;
  /** Shared named settings and secrets. */
  readonly settings: SettingStore;
  /** Who runs each once-per-cluster job now. */
  readonly jobLeads: JobLeadStore;
  /** Counters over a window that hold across processes and nodes (AUTH failures, console sign-ins). */
  readonly throttles: ThrottleStore;
  /** TLS-RPT: how TLS to each MTA-STS domain went, per day, and which reports are sent. */
  readonly tlsReports: TlsReportStore;
  /** Activations of reply-driven shaping rules (issue 35). */
  readonly shaping: ShapingStore;
  /** Destination limits' connection slots, leased so a cap holds across processes and nodes (issue 35). */
  readonly connectionSlots: ConnectionSlotStore;
  /** Reservations against the monthly send limit, so concurrent sends cannot pass it together. */
  readonly sendLimits: SendLimitStore;
  /** The durable queue: accept, claim, renew, record (ARCHITECTURE: Queue). */
  readonly queue: QueueStore;
  /** The operator's views of the queue and hand actions (retry, drop). */
  readonly queueViews: QueueViewStore;
  /** Message bodies (ARCHITECTURE: Bodies). */
  readonly bodies: BodyStore;
  /** The SMTP log and its search (ARCHITECTURE: Log). */
  readonly smtpLog: SmtpLogStore;
  /** Hourly roll-ups (ARCHITECTURE: Metrics). */
  readonly metrics: MetricStore;
  /** Open and click tracking (ARCHITECTURE: Tracking). */
  readonly tracking: TrackingStore;
  /** Webhook endpoints, signing keys, outbox batches (ARCHITECTURE: Events). */
  readonly webhooks: WebhookStore;
  /** Outbound: suppressions, DKIM keys, lockdown, tracking domains, sender abuse. */
  readonly suppressions: SuppressionStore;
  readonly dkimKeys: DkimKeyStore;
  readonly lockdown: LockdownStore;
  readonly trackingDomains: TrackingDomainStore;
  readonly senderAbuse: SenderAbuseStore;
  /** Inbound: domains (aliases, downstreams, subscriptions), lists, recipients, reports, quarantine. */
  readonly inboundDomains: InboundDomainStore;
  readonly inboundLists: InboundListStore;
  /** Recipients created with PUT /inbound/v1/users: whether their domain's policy filters their mail. */
  readonly inboundRecipients: InboundRecipientStore;
  readonly inboundReports: InboundReportStore;
  /** Every inbound message × recipient the MX relayed, quarantined, refused or deferred, and its search. */
  readonly inboundLog: InboundLogStore;
  readonly quarantine: QuarantineStore;
  /** Quarantine digests: which domains have them, and when each domain and address was last done. */
  readonly quarantineDigests: QuarantineDigestStore;
  /** The inbound classifier's models (filters/bayes.ts reads and trains them). */
  readonly bayes: BayesStore;
  /** Greylisting's memory: triplets and client networks. */
  readonly greylist: GreylistStore;
  /** Alert monitors and alerts. */
  readonly alerts: AlertStore;
  /** Web console sessions and operator tokens. */
  readonly console: ConsoleStore;
  /** Console sign-in's second factor: TOTP secrets of accounts and the operator (issue 38). */
  readonly totp: TotpStore;
  /** Who changed what through the API, the console or the CLI (issue 38). */
  readonly audit: AuditStore;
  /** Retention's bounded deletes. */
  readonly retention: RetentionStore;
  /** What /healthz and /readyz read. */
  readonly health: HealthStore;
  /** Writes one consistent copy of the whole store to the file `target` (which must not exist), while it is in use. */
  backup(target: string): Promise<void>;
  /** Waits for writes in progress, then closes the store; no port may be used afterwards. */
  close(): Promise<void>;
}
