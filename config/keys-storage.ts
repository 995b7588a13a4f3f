// Owns the keys of the storage backend: the embedded SQLite default, or PostgreSQL shared by several nodes (issue 33).
import { key } from './key-def.js';
import { integer, oneOf, str } from './values.js';

/** A `postgres://` or `postgresql://` URL (libpq's form; `sslmode` and the other query parameters are pg's). */
export function parsePostgresUrl(raw: unknown): string | undefined {
  const s = str(raw);
  if (s === '') return undefined;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Error('is not a URL (postgres://user:password@host:5432/database)');
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('must be a postgres:// or postgresql:// URL');
  return s;
}

/** `storage.backend`, `storage.postgres_url`, `storage.postgres_pool_size`. */
export const STORAGE_KEYS = {
  backend: key({
    doc: 'Where Sluice keeps its state: "sqlite" (embedded, in data_dir) or "postgres" (storage.postgres_url, shared by several nodes).',
    defaultText: 'sqlite',
    default: () => 'sqlite' as const,
    parse: oneOf(['sqlite', 'postgres'] as const),
  }),
  postgresUrl: key({
    doc: 'The PostgreSQL database when storage.backend is "postgres": postgres://user:password@host:5432/database (sslmode and other libpq parameters as query parameters; the password may come from PGPASSWORD instead).',
    defaultText: 'none',
    default: () => undefined,
    parse: parsePostgresUrl,
    secret: true,
  }),
  postgresPoolSize: key({
    doc: 'Connections to PostgreSQL each Sluice process keeps at most.',
    defaultText: '10',
    default: () => 10,
    parse: integer(1, 1000, 'a count'),
  }),
};
