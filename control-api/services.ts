// Owns the set of services the control-plane routes receive (wired in bin/, injected here; no globals): the storage
// ports a route reads and writes, and the mta/ services it calls. A route's handler names the members it uses.
import type { ThrottleStore } from '../storage/ports/throttles.js';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { AccountRow, AccountStore } from '../storage/ports/accounts.js';
import type { InboundDomainStore } from '../storage/ports/inbound-domains.js';
import type { InboundListStore } from '../storage/ports/inbound-lists.js';
import type { InboundRecipientStore } from '../storage/ports/inbound-recipients.js';
import type { InboundReportStore } from '../storage/ports/inbound-reports.js';
import type { InboundLogStore } from '../storage/ports/inbound-log.js';
import type { QuarantineStore } from '../storage/ports/quarantine.js';
import type { BayesClassifier } from '../filters/bayes.js';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import type { SmtpLogStore } from '../storage/ports/smtp-log.js';
import type { SuppressionStore } from '../storage/ports/suppressions.js';
import type { DkimKeyStore } from '../storage/ports/dkim-keys.js';
import type { SendBody } from './send-schema.js';
import type { Idempotency } from './idempotency.js';
import type { AcceptVerdict, OutboundVerdict } from '../mta/outbound/outbound-verdict.js';
import type { IdempotentAnswer } from '../storage/ports/queue.js';
import type { LockdownVerdict } from '../filters/lockdown.js';
import type { LockdownStore } from '../storage/ports/lockdown.js';
import type { CheckDomainRequest, runCheckDomain } from '../mta/outbound/check-domain.js';
import type { WebhookStore } from '../storage/ports/webhooks.js';
import type { WebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import type { WebhookSigner } from '../mta/webhooks/signing.js';
import type { WriteFailure } from '../storage/ports/health.js';
import type { QueueAdmin } from '../mta/queue/queue-admin.js';
import type { ShapingStore } from '../storage/ports/shaping.js';
import type { ConsoleStore } from '../storage/ports/console.js';
import type { AuditStore } from '../storage/ports/audit.js';
import type { TotpStore } from '../storage/ports/totp.js';
import type { MetricStore } from '../storage/ports/metrics.js';
import type { Tracker } from '../mta/outbound/tracker.js';
import type { TrackingDomainDeps } from '../mta/outbound/tracking-domains.js';
import type { SenderAbuse } from '../mta/outbound/sender-abuse.js';
import type { KeptValues } from '../mta/outbound/send-request.js';
import type { AlertStore } from '../storage/ports/alerts.js';
import type { TargetGuard } from '../mta/delivery/target-guard.js';
import type { ByteBudget, ScratchArea } from '../storage/scratch.js';
import type { OverviewFacts } from './console/overview-facts.js';

/** Health of the parts /healthz and /readyz report on. */
export interface HealthReport {
  /** Reads answer. */
  storage: boolean;
  /** The last write failed and nothing has committed since (storage/write-health.ts). */
  writeFailure: WriteFailure | undefined;
  /** Each listener (http, mx, submission…): bound and accepting. */
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
  /** Recipients created with PUT /inbound/v1/users (the MX reads which of them are unfiltered). */
  inboundRecipients: InboundRecipientStore;
  /** False positive / negative reports for the operator. */
  inboundReports: InboundReportStore;
  /** The inbound log (tracking center): the MX writes it, GET /inbound/v1/log and the console read it. */
  inboundLog: InboundLogStore;
  /** Quarantined inbound messages (the inbound pipeline writes them, /inbound/v1/quarantine reads and releases). */
  quarantine: QuarantineStore;
  /** Relays an inbound message through the durable queue (quarantine release); resolves once committed. */
  relayInbound: InboundRelay;
  /** The inbound classifier: releases, deletes as spam and reports train the account's model. */
  bayes: BayesClassifier;
  /**
   * The outbound recipe for a REST send (mta/outbound/send.ts): validate, compose, lockdown, sign, scan, queue
   * durably; its verdict. `perMessage` (POST /send): refused messages are reported per personalization instead of
   * refusing the request.
   */
  send: (
    account: AccountRow,
    body: SendBody,
    opts: { dryRun: boolean; upstream: string | null; auth: string | null; perMessage?: boolean; kept?: KeptValues; answer?: (verdict: AcceptVerdict) => IdempotentAnswer },
  ) => Promise<OutboundVerdict>;
  /** Idempotency-Key of send requests (control-api/idempotency.ts): keys in progress here, answers kept in the store. */
  idempotency: Idempotency;
  /** Domain Lockdown (mta/outbound/lockdown-check.ts): may this account send as this domain now? */
  lockdown: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  /** The operator's lockdown authorizations (`sluice lockdown`; the console's Lockdown view, operators only change it). */
  lockdownAllow: LockdownStore;
  /** Outbound abuse control: sender blocks, remediation (delisting), scanning policy. */
  abuse: SenderAbuse;
  /** Alert monitors and the alerts they fired (/tx/v1/monitors, /outbound/v1/alertcount). */
  alerts: AlertStore;
  /**
   * Room for messages (bin/message-space.ts): the process-wide bound on bytes held in memory
   * (`smtp.max_buffered_bytes`, which request bodies count against) and the free-space check of data_dir
   * (`queue.min_free_bytes`), and the scratch area (data_dir/tmp) where a send's long strings and composed
   * messages are kept instead of memory. Absent (tests of other parts): neither applies, everything stays in memory.
   */
  messageSpace?: { budget: ByteBudget; hasRoom(): Promise<boolean>; scratch?: ScratchArea };
  /** RFC 8058 unsubscribe links: what a token names, and acting on it. */
  unsubscribe: {
    inspect: (token: string) => Promise<{ recipient: string } | undefined>;
    run: (token: string, via: 'one-click' | 'link') => Promise<boolean>;
  };
  /** Open and click tracking URLs (GET /t/o, /t/c). */
  tracking: Pick<Tracker, 'hit'>;
  /** Custom tracking domains: their store, DNS resolver, verification secret and the public URL they point at. */
  trackingDomains: TrackingDomainDeps;
  /** Hourly metric roll-ups (GET /tx/v1/metrics/*). */
  metrics: MetricStore;
  /** POST /tx/v1/check-domain. */
  checkDomain: (account: AccountRow, req: CheckDomainRequest) => ReturnType<typeof runCheckDomain>;
  /** Signed webhooks: endpoints and batch history, the dispatcher (validate, resend), the signer (public keys, alerts). */
  webhooks: {
    store: WebhookStore;
    dispatcher: Pick<WebhookDispatcher, 'validate' | 'resend'>;
    signer: WebhookSigner;
  };
  /**
   * The outbound-connection policy, as the routes that save a tenant-chosen target use it (webhook endpoints,
   * monitor webhook URLs, downstream addresses): refused targets are a 400 naming the rule.
   */
  targets: Pick<TargetGuard, 'screen'>;
  /** The queue by hand (the console; what `sluice queue` does): list, show, retry, delete, scoped by account. */
  queue: QueueAdmin;
  /** Shaping activations in force (outbound.shaping_rules), and the operator's hand to lift one early. */
  shaping: Pick<ShapingStore, 'active' | 'lift'>;
  /** Web console sessions and operator tokens. */
  console: ConsoleStore;
  /** Console sign-in's second factor (TOTP secrets and their last used steps). */
  totp: TotpStore;
  /** The audit log: every change through the API and the console is appended (control-api/audit-middleware.ts). */
  audit: AuditStore;
  /** HMAC key of the console's sign-in CSRF tokens (created on first start, kept in the store as console_secret). */
  consoleSecret: Buffer;
  /**
   * Domain-admin login links (GET /inbound/v1/domains/{domain}/login-link): their HMAC key (created on first start,
   * kept in the store as login_link_secret) and the public base URL the links point at (http.public_url).
   */
  loginLinks: { secret: Buffer; publicUrl: () => string };
  /** HMAC key of quarantine digests' links (created on first start, kept in the store as digest_link_secret). */
  digestLinks: { secret: Buffer };
  /** Counters that hold across processes and nodes (the console's sign-in failures). */
  throttles: ThrottleStore;
  /** The key authorization of a pending ACME HTTP-01 token (RFC 8555 §8.3, in the store), undefined for any other. */
  acmeChallenge: (token: string) => Promise<string | undefined>;
  /** Injected clock (ms since epoch). */
  now: () => number;
  logger: Logger;
  /** `probe`: when the last write failed, first try one small write that waits for no lock (for /readyz). */
  health: (opts?: { probe?: boolean }) => Promise<HealthReport>;
  /** The console overview's facts of this process (bin/wiring-overview.ts); absent in tests of other parts. */
  overview?: OverviewFacts;
}
