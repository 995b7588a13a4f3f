// Owns the PostgreSQL schema's versions: forward-only numbered migrations, applied once by whichever node takes the
// advisory lock first, and refused by a node older than the schema it finds.
import type { Pg } from './database.js';
import { READ_VERSIONS_SCHEMA } from './read-cache.js';
import { SCHEMA_PARTS } from './schema.js';
import { BAYES_EVICT_SCHEMA } from './schema/bayes-evict.js';
import { BAYES_TOKENIZER_SCHEMA } from './schema/bayes-tokenizer.js';
import { BODY_COMPRESSION_SCHEMA } from './schema/body-compression.js';
import { IDEMPOTENCY_KEYS_SCHEMA } from './schema/idempotency-keys.js';
import { SEND_RESERVATIONS_SCHEMA } from './schema/send-reservations.js';
import { THROTTLES_SCHEMA } from './schema/throttles.js';
import { VERP_SCHEMA } from './schema/verp.js';
import { TLS_RESULTS_SCHEMA } from './schema/tls-results.js';
import { POOLS_SCHEMA } from './schema/pools.js';
import { SHAPING_SCHEMA } from './schema/shaping.js';
import { INBOUND_RECIPIENTS_SCHEMA } from './schema/inbound-recipients.js';
import { CONSOLE_DOMAIN_SCHEMA } from './schema/console-domain.js';
import { QUARANTINE_DIGESTS_SCHEMA } from './schema/quarantine-digests.js';
import { INBOUND_LOG_SCHEMA } from './schema/inbound-log.js';
import { CONSOLE_RECIPIENT_SCHEMA } from './schema/console-recipient.js';
import { AUDIT_LOG_SCHEMA } from './schema/audit-log.js';
import { TOTP_SCHEMA } from './schema/totp.js';
import { CONNECTION_SLOTS_SCHEMA } from './schema/connection-slots.js';

/**
 * Never edit a released migration; append a new one. Migration 1 is the schema as the PostgreSQL backend first
 * shipped it, made of the parts in schema.ts (one per area of the store); 2 adds the throttles' counters, 3 the send
 * limit's reservations, 4 the versions of the tables the read cache keeps (read-cache.ts), 5 the classifier cap's
 * index by count (schema/bayes-evict.ts), 6 lz4 for message bodies (schema/body-compression.ts), 7 the tokeniser
 * of each classifier model (schema/bayes-tokenizer.ts); 8 the answers kept under Idempotency-Key (schema/idempotency-keys.ts), 9 the VERP flag of messages
 * (schema/verp.ts), 10 TLS-RPT results (schema/tls-results.ts), 11 sending pools
 * (schema/pools.ts), 12 shaping activations (schema/shaping.ts), 13 inbound recipients (schema/inbound-recipients.ts),
 * 14 the domain a console session is limited to (schema/console-domain.ts), 15 quarantine digests
 * (schema/quarantine-digests.ts), 16 the inbound log (schema/inbound-log.ts), 17 the recipient a console session is
 * limited to (schema/console-recipient.ts), 18 the audit log (schema/audit-log.ts), 19 console TOTP secrets
 * (schema/totp.ts), 20 destination limits' connection slots (schema/connection-slots.ts). Timestamps are bigint milliseconds since the epoch, as on SQLite, so ports
 * return the same numbers on both backends.
 */
export const PG_MIGRATIONS: readonly string[] = [SCHEMA_PARTS.join('\n'), THROTTLES_SCHEMA, SEND_RESERVATIONS_SCHEMA, READ_VERSIONS_SCHEMA, BAYES_EVICT_SCHEMA, BODY_COMPRESSION_SCHEMA, BAYES_TOKENIZER_SCHEMA, IDEMPOTENCY_KEYS_SCHEMA, VERP_SCHEMA, TLS_RESULTS_SCHEMA, POOLS_SCHEMA, SHAPING_SCHEMA, INBOUND_RECIPIENTS_SCHEMA, CONSOLE_DOMAIN_SCHEMA, QUARANTINE_DIGESTS_SCHEMA, INBOUND_LOG_SCHEMA, CONSOLE_RECIPIENT_SCHEMA, AUDIT_LOG_SCHEMA, TOTP_SCHEMA, CONNECTION_SLOTS_SCHEMA];

/**
 * The advisory-lock key every node takes to migrate (an arbitrary constant: "sluice" in ASCII); `sluice store copy`
 * holds it for its whole transaction, so a node started meanwhile waits for the copy instead of seeing half of it.
 */
export const MIGRATION_LOCK = 0x736c75696365;

/**
 * Brings the database up to this version's schema. Nodes starting together serialise on the advisory lock; the
 * first applies what is missing, the others find it done. A database already past this version is refused: this
 * node's code does not know its tables.
 */
export async function migrate(pg: Pg): Promise<{ from: number; to: number }> {
  return pg.tx(async (q) => {
    await q('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await q('CREATE TABLE IF NOT EXISTS sluice_schema (version integer NOT NULL)');
    const rows = await q<{ version: number }>('SELECT version FROM sluice_schema');
    const from = rows[0]?.version ?? 0;
    if (rows.length === 0) await q('INSERT INTO sluice_schema (version) VALUES (0)');
    if (from > PG_MIGRATIONS.length) {
      throw new SchemaTooNew(from, PG_MIGRATIONS.length);
    }
    for (let v = from; v < PG_MIGRATIONS.length; v++) {
      await q(PG_MIGRATIONS[v] as string);
    }
    await q('UPDATE sluice_schema SET version = $1', [PG_MIGRATIONS.length]);
    return { from, to: PG_MIGRATIONS.length };
  });
}

/** The database was migrated by a newer Sluice than this one. */
export class SchemaTooNew extends Error {
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(`the database's schema is version ${found}, newer than this Sluice knows (${known}): upgrade this node`);
  }
}

/** The schema version a database is at (0 before the first migration), without changing anything. */
export async function schemaVersion(pg: Pg): Promise<number> {
  const rows = await pg.query<{ version: number }>(
    "SELECT version FROM sluice_schema WHERE to_regclass('sluice_schema') IS NOT NULL",
  ).catch(() => []);
  return rows[0]?.version ?? 0;
}
