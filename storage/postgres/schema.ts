// Owns the list of the PostgreSQL schema's parts: one module per area under schema/, joined into migration 1.
import { ACCOUNTS_SCHEMA } from './schema/accounts.js';
import { INBOUND_SCHEMA } from './schema/inbound.js';
import { QUARANTINE_SCHEMA } from './schema/quarantine.js';

/**
 * Each area's tables, in an order where a table comes after the tables it references. Until the backend ships,
 * a part is edited in place; after that, changes are new migrations in migrations.ts.
 */
export const SCHEMA_PARTS: readonly string[] = [ACCOUNTS_SCHEMA, INBOUND_SCHEMA, QUARANTINE_SCHEMA];
