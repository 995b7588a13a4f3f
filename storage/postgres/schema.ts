// Owns the list of the PostgreSQL schema's parts: one module per area under schema/, joined into migration 1.
import { ACCOUNTS_SCHEMA } from './schema/accounts.js';
import { SMTP_LOG_SCHEMA } from './schema/smtp-log.js';

/**
 * Each area's tables, in an order where a table comes after the tables it references. Until the backend ships,
 * a part is edited in place; after that, changes are new migrations in migrations.ts.
 */
export const SCHEMA_PARTS: readonly string[] = [ACCOUNTS_SCHEMA, SMTP_LOG_SCHEMA];
