// Owns choosing the storage backend: `sluice` opens its one Store here (bin/ wiring, the CLI), never a backend directly.
import type { Config } from '../config/load.js';
import type { Store } from './ports/store.js';
import { checkDatabaseFile, databasePath, spooledFilesOf } from './sqlite/database.js';
import { openSqliteStore } from './sqlite/store.js';

export interface OpenOptions {
  /** The injected clock. */
  now: () => number;
  /** Told the seconds each write transaction took (the commit-latency metric). */
  onCommit?: (seconds: number) => void;
}

/**
 * Opens the store the configuration names, creating and migrating it when needed. Today that is always the embedded
 * SQLite store in `data_dir` (ARCHITECTURE: the embedded default); a later backend is chosen here, and nothing
 * above storage/ changes.
 */
export function openStore(config: Pick<Config, 'dataDir'>, opts: OpenOptions): Store {
  return openSqliteStore(config.dataDir, opts);
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
