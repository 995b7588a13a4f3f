// Owns the keys of the retention job: how long logs, message bodies, tracking tokens, alerts, sender strikes, hourly
// metric counters, retired DKIM keys, inbound reports and the classifier's rare tokens and learned-message records are kept before
// mta/jobs/retention.ts prunes them (each bounded so a busy instance does not grow without end).
import { key } from './key-def.js';
import { parseDays } from './values.js';

/**
 * `retention.log_days`, `message_days`, `tracking_days`, `alert_days`, `metric_days`, `dkim_key_days`, `report_days`, `bayes_token_days`,
 * `bayes_learned_days` (mta/jobs/retention.ts).
 */
export const RETENTION_KEYS = {
  logDays: key({
    doc: 'Days SMTP log rows (outbound search), delivery attempt history, inbound log rows and audit log entries (GET /tx/v1/audit, sluice audit, the console\'s Audit view) are kept, and revoked API keys, deleted SMTP passwords and deleted sub-accounts (those no record names) after they stopped; rows of mail still queued, deferred or held are never pruned.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  messageDays: key({
    doc: 'Days message bodies are kept once every recipient is delivered, bounced or dropped; mail still queued, deferred or held is never pruned.',
    defaultText: '7',
    default: () => 7,
    parse: parseDays,
  }),
  trackingDays: key({
    doc: 'Days the open pixel and tracked links of a sent message keep working (what their tokens name is kept that long); later hits answer 404.',
    defaultText: '365',
    default: () => 365,
    parse: parseDays,
  }),
  alertDays: key({
    doc: 'Days fired alerts (a monitor\'s alert history, alertcount; also of deleted monitors) and sender strikes and delistings are kept; an alert still being delivered, or a strike inside abuse.block_window_hours, is never pruned.',
    defaultText: '90',
    default: () => 90,
    parse: parseDays,
  }),
  metricDays: key({
    doc: 'Days the hourly metric counters (one row per account, campaign and hour: GET /tx/v1/metrics, /metrics/senders, the console) are kept; reports over older hours count 0. 400 keeps a year-over-year view.',
    defaultText: '400',
    default: () => 400,
    parse: parseDays,
  }),
  dkimKeyDays: key({
    doc: 'Days a retired or revoked DKIM key (it signs nothing) is kept after its status changed; then it is deleted and its selector may be created again.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  reportDays: key({
    doc: 'Days reports (POST /inbound/v1/report) are kept for the operator.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  bayesTokenDays: key({
    doc: 'Days a classifier token counted in one message only is kept after that message was learned (as SpamAssassin\'s bayes_expiry of rare tokens); tokens seen in two or more messages stay, up to filters.bayes.max_tokens.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  bayesLearnedDays: key({
    doc: 'Days the classifier remembers which messages it learned (so a message learned twice counts once, and learned as the other class moves); later the same message counts again.',
    defaultText: '90',
    default: () => 90,
    parse: parseDays,
  }),
};
