// Owns the list of the PostgreSQL schema's parts: one module per area under schema/, joined into migration 1.
import { ACCOUNTS_SCHEMA } from './schema/accounts.js';
import { OUTBOX_EVENTS_SCHEMA, OUTBOX_SCHEMA } from './schema/outbox.js';
import { INBOUND_SCHEMA } from './schema/inbound.js';
import { QUARANTINE_SCHEMA } from './schema/quarantine.js';
import { DKIM_TRACKING_DOMAINS_SCHEMA } from './schema/dkim-tracking-domains.js';
import { FILTERING_MEMORY_SCHEMA } from './schema/filtering-memory.js';
import { SENDER_ABUSE_SCHEMA } from './schema/sender-abuse.js';
import { SUPPRESSIONS_SCHEMA } from './schema/suppressions.js';
import { METRICS_SCHEMA } from './schema/metrics.js';
import { QUEUE_SCHEMA } from './schema/queue.js';
import { SMTP_LOG_SCHEMA } from './schema/smtp-log.js';

/**
 * Each area's tables, in an order where a table comes after the tables it references. Until the backend ships,
 * a part is edited in place; after that, changes are new migrations in migrations.ts.
 */
export const SCHEMA_PARTS: readonly string[] = [
  ACCOUNTS_SCHEMA,
  SUPPRESSIONS_SCHEMA,
  QUEUE_SCHEMA,
  SMTP_LOG_SCHEMA,
  METRICS_SCHEMA,
  OUTBOX_SCHEMA,
  OUTBOX_EVENTS_SCHEMA,
  INBOUND_SCHEMA,
  QUARANTINE_SCHEMA,
  DKIM_TRACKING_DOMAINS_SCHEMA,
  SENDER_ABUSE_SCHEMA,
  FILTERING_MEMORY_SCHEMA,
];
