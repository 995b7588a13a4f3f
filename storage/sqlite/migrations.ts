// Owns the schema: forward-only numbered migrations; the index + 1 is the PRAGMA user_version it leads to.
import { ACCOUNTS } from './migrations/001-accounts.js';
import { OUTBOUND } from './migrations/002-outbound.js';
import { SMTP_LOG_SEARCH } from './migrations/003-smtp-log-search.js';
import { LOCKDOWN_ALLOW } from './migrations/004-lockdown-allow.js';
import { INBOUND } from './migrations/005-inbound.js';
import { QUARANTINE } from './migrations/006-quarantine.js';
import { WEBHOOKS } from './migrations/007-webhooks.js';
import { MESSAGE_VERDICTS } from './migrations/008-message-verdicts.js';
import { ENGAGEMENT } from './migrations/009-engagement.js';
import { TRACKING_DOMAINS } from './migrations/010-tracking-domains.js';
import { SENDER_ABUSE } from './migrations/011-sender-abuse.js';
import { ALERTS } from './migrations/012-alerts.js';
import { CONSOLE } from './migrations/013-console.js';
import { WEBHOOK_ENROLMENT } from './migrations/014-webhook-enrolment.js';
import { METRIC_DETAIL } from './migrations/015-metric-detail.js';
import { INBOUND_FILTERING } from './migrations/016-inbound-filtering.js';
import { LEASES } from './migrations/017-leases.js';
import { SPOOL } from './migrations/018-spool.js';
import { READ_INDEXES } from './migrations/019-read-indexes.js';
import { TENANT_BOUNDS } from './migrations/020-tenant-bounds.js';
import { GREYLIST_BOUNDS } from './migrations/021-greylist-bounds.js';
import { TENANT_TABLE_BOUNDS } from './migrations/022-tenant-table-bounds.js';
import { READ_CACHE } from './migrations/023-read-cache.js';
import { SUB_ACCOUNT_PURGE } from './migrations/024-sub-account-purge.js';
import { WEBHOOK_ENROLMENT_STATE } from './migrations/025-webhook-enrolment-state.js';
import { JOB_LEADS } from './migrations/026-job-leads.js';
import { THROTTLES } from './migrations/027-throttles.js';
import { SEND_RESERVATIONS } from './migrations/028-send-reservations.js';
import { LOG_SUBJECT_COVERING } from './migrations/029-log-subject-covering.js';
import { BAYES_EVICT_BY_COUNT } from './migrations/030-bayes-evict-by-count.js';
import { BAYES_TOKENIZER } from './migrations/031-bayes-tokenizer.js';
import { IDEMPOTENCY_KEYS } from './migrations/032-idempotency-keys.js';
import { VERP } from './migrations/033-verp.js';
import { TLS_RESULTS } from './migrations/034-tls-results.js';
import { POOLS } from './migrations/035-pools.js';
import { SHAPING } from './migrations/036-shaping.js';
import { INBOUND_RECIPIENTS } from './migrations/037-inbound-recipients.js';
import { CONSOLE_DOMAIN } from './migrations/038-console-domain.js';
import { QUARANTINE_DIGESTS } from './migrations/039-quarantine-digests.js';
import { INBOUND_LOG } from './migrations/040-inbound-log.js';
import { CONSOLE_RECIPIENT } from './migrations/041-console-recipient.js';
import { AUDIT_LOG } from './migrations/042-audit-log.js';
import { TOTP } from './migrations/043-totp.js';
import { CONNECTION_SLOTS } from './migrations/044-connection-slots.js';

/**
 * Never edit a released migration; append a new one (its SQL in its own module under migrations/). Timestamps are
 * INTEGER milliseconds since the epoch.
 */
export const MIGRATIONS: readonly string[] = [
  ACCOUNTS, // 1
  OUTBOUND, // 2
  SMTP_LOG_SEARCH, // 3
  LOCKDOWN_ALLOW, // 4
  INBOUND, // 5
  QUARANTINE, // 6
  WEBHOOKS, // 7
  MESSAGE_VERDICTS, // 8
  ENGAGEMENT, // 9
  TRACKING_DOMAINS, // 10
  SENDER_ABUSE, // 11
  ALERTS, // 12
  CONSOLE, // 13
  WEBHOOK_ENROLMENT, // 14
  METRIC_DETAIL, // 15
  INBOUND_FILTERING, // 16
  LEASES, // 17
  SPOOL, // 18
  READ_INDEXES, // 19
  TENANT_BOUNDS, // 20
  GREYLIST_BOUNDS, // 21
  TENANT_TABLE_BOUNDS, // 22
  READ_CACHE, // 23
  SUB_ACCOUNT_PURGE, // 24
  WEBHOOK_ENROLMENT_STATE, // 25
  JOB_LEADS, // 26
  THROTTLES, // 27
  SEND_RESERVATIONS, // 28
  LOG_SUBJECT_COVERING, // 29
  BAYES_EVICT_BY_COUNT, // 30
  BAYES_TOKENIZER, // 31
  IDEMPOTENCY_KEYS, // 32
  VERP, // 33
  TLS_RESULTS, // 34
  POOLS, // 35
  SHAPING, // 36
  INBOUND_RECIPIENTS, // 37
  CONSOLE_DOMAIN, // 38
  QUARANTINE_DIGESTS, // 39
  INBOUND_LOG, // 40
  CONSOLE_RECIPIENT, // 41
  AUDIT_LOG, // 42
  TOTP, // 43
  CONNECTION_SLOTS, // 44
];
