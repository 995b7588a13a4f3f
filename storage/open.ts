// Owns choosing the storage backend: `sluice` opens its one Store here (bin/ wiring, the CLI), never a backend directly.
import type { Config } from '../config/load.js';
import { CLOCK_SKEW_WARN_MS, describeSkew } from './ports/health.js';
import type { Store } from './ports/store.js';
import { checkDatabaseFile, databasePath, spooledFilesOf } from './sqlite/database.js';
import { openSqliteStore } from './sqlite/store.js';
import { ConfigError } from '../config/key-def.js';
import type * as PostgresStore from './postgres/store.js';

export interface OpenOptions {
  /** The injected clock. */
  now: () => number;
  /** Told the seconds each write transaction took (the commit-latency metric). */
  onCommit?: (seconds: number) => void;
}

/** What choosing a store reads of the configuration (storage.* may be absent: the embedded default). */
export type StoreConfig = Pick<Config, 'dataDir'> & { storage?: Pick<Config['storage'], 'backend' | 'postgresUrl' | 'postgresPoolSize'> };

/**
 * Opens the store the configuration names, creating and migrating it when needed: the embedded SQLite store in
 * `data_dir` (ARCHITECTURE: the embedded default), or PostgreSQL at storage.postgres_url. Rejects with a
 * ConfigError (one line naming the setting: exit 2) when PostgreSQL cannot be used.
 */
export async function openStore(config: StoreConfig, opts: OpenOptions): Promise<Store> {
  if (config.storage?.backend !== 'postgres') return openSqliteStore(config.dataDir, opts);
  const { postgresUrl, postgresPoolSize } = config.storage;
  const pg = await postgresStore();
  return asConfigError(pg, pg.openPostgresStore({ url: postgresUrl as string, poolSize: postgresPoolSize, ...opts }));
}

/** The PostgreSQL store's module, loaded only when configured: `pg` and it add about 14 MB to a process. */
const postgresStore = (): Promise<typeof PostgresStore> => import('./postgres/store.js');

/** PostgreSQL that cannot be used as one line naming the setting, exit 2 (bin/cli.ts), as any configuration error. */
async function asConfigError<T>(pg: typeof PostgresStore, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof pg.PostgresOpenError) throw new ConfigError(err.key, err.problem);
    throw err;
  }
}

/**
 * The store's own file inside a data directory, relative to it (a backup copies it through `Store.backup`, not as a
 * plain file, and skips it with its `-wal`/`-shm` companions when copying the rest).
 */
export function storeFileName(): string {
  return databasePath('');
}

/**
 * The body files (relative to data_dir, `/`-separated) a store file no one writes names: what a backup made of that
 * snapshot must carry besides it. Files the snapshot does not name (orphans, bodies of later messages) are not state.
 */
export function storeBodyFiles(file: string): string[] {
  return spooledFilesOf(file);
}

/**
 * Checks a store file no one has open (a backup before it is restored): sound, and of a schema this version knows.
 * Returns the problem in words, or undefined when it is sound.
 */
export function checkStoreFile(file: string): string | undefined {
  return checkDatabaseFile(file);
}

/**
 * One line on the store the configuration names, for `sluice config check`: the embedded file, or the PostgreSQL
 * server's version and the schema's (reached without changing anything). Rejects with a ConfigError when PostgreSQL
 * cannot be reached, as a start would.
 */
export async function describeStore(config: StoreConfig): Promise<string> {
  if (config.storage?.backend !== 'postgres') return `storage: sqlite (${databasePath(config.dataDir)})`;
  const pg = await postgresStore();
  const p = await asConfigError(pg, pg.probePostgres(config.storage.postgresUrl as string));
  const schema = p.schema === 0 ? 'no schema yet (the first node to start creates it)' : `schema version ${p.schema}`;
  const fit = p.schema > p.known ? `; newer than this Sluice (${p.known}): upgrade this node` : p.schema > 0 && p.schema < p.known ? `; this Sluice migrates it to ${p.known} at start` : '';
  const skew = Math.abs(p.clockSkewMs) > CLOCK_SKEW_WARN_MS ? `\nwarning: ${describeSkew(p.clockSkewMs)}: keep node clocks in sync (NTP)` : '';
  return `storage: postgres, server ${p.server}, ${schema}${fit}; clock skew ${p.clockSkewMs} ms${skew}`;
}
