// Owns the list of the PostgreSQL schema's parts: one module per area under schema/, joined into migration 1.
import { ACCOUNTS_SCHEMA } from './schema/accounts.js';
import { JOBS_SCHEMA } from './schema/jobs.js';

/**
 * Each area's tables, in an order where a table comes after the tables it references. Until the backend ships,
 * a part is edited in place; after that, changes are new migrations in migrations.ts.
 */
export const SCHEMA_PARTS: readonly string[] = [ACCOUNTS_SCHEMA, JOBS_SCHEMA];
