// Owns opening the SQLite database: pragmas for durability and concurrency, then forward-only migrations.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ConfigError } from '../../config/keys.js';
import { MIGRATIONS } from './migrations.js';
import { preparePrivateDatabase, PRIVATE_DIR_MODE } from '../private-files.js';

/** The database handle every repository takes. Only storage/ knows it is better-sqlite3. */
export type Db = Database.Database;

/** Path of the main database file inside a data directory. */
export function databasePath(dataDir: string): string {
  return path.join(dataDir, 'sluice.db');
}

/**
 * Opens (creating if needed) the database in `dataDir` and applies pending migrations (up to `opts.upTo`: tests).
 * WAL lets the CLI and a running server share the file; busy_timeout makes a writer wait for the other instead of
 * failing; synchronous=FULL makes every commit durable before we answer 250/202 (a WAL commit with NORMAL may be
 * rolled back by a power cut, see sqlite.org/pragma.html#pragma_synchronous).
 */
export function openDatabase(dataDir: string, opts: { upTo?: number } = {}): Db {
  let db: Db | undefined;
  try {
    fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    // 0600 whatever the umask and the mode of a data_dir that existed already; -wal and -shm follow the file.
    preparePrivateDatabase(databasePath(dataDir));
    db = new Database(databasePath(dataDir));
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = FULL');
  } catch (err) {
    db?.close();
    throw dataDirError(dataDir, err as NodeJS.ErrnoException);
  }
  migrate(db, opts.upTo);
  return db;
}

/**
 * Why `dataDir` cannot hold the database, as one line naming the key and the path (`data_dir /x: …`); the raw
 * errors (`EEXIST … mkdir`, `unable to open database file`) name neither.
 */
export function dataDirError(dataDir: string, err: NodeJS.ErrnoException): ConfigError {
  const code = err.code ?? 'unknown';
  const why: Record<string, string> = {
    EEXIST: 'exists and is not a directory',
    ENOTDIR: 'a parent of it is not a directory',
    EACCES: `permission denied (EACCES) for user ${process.getuid?.() ?? '?'}: make the directory writable by the user Sluice runs as`,
    EPERM: 'operation not permitted (EPERM): make the directory writable by the user Sluice runs as',
    EROFS: 'the file system is read-only (EROFS)',
    ENOSPC: 'no space left on the device (ENOSPC)',
    SQLITE_CANTOPEN: `cannot open ${path.basename(databasePath(dataDir))}: ${err.message} (SQLITE_CANTOPEN); the directory and the file must be readable and writable by the user Sluice runs as`,
    SQLITE_READONLY: `${path.basename(databasePath(dataDir))} is read-only (SQLITE_READONLY): the directory and the file must be writable by the user Sluice runs as`,
    SQLITE_NOTADB: `${path.basename(databasePath(dataDir))} is not an SQLite database (SQLITE_NOTADB): restore it from a backup (sluice restore)`,
    SQLITE_CORRUPT: `${path.basename(databasePath(dataDir))} is corrupt (SQLITE_CORRUPT): restore it from a backup (sluice restore)`,
  };
  return new ConfigError(`data_dir ${dataDir}`, why[code] ?? `${err.message} (${code})`);
}

/**
 * Applies every migration newer than PRAGMA user_version, each in its own immediate transaction; `upTo` stops at
 * that version (only the upgrade tests, which build a data_dir of an older schema, pass it).
 */
export function migrate(db: Db, upTo = MIGRATIONS.length): void {
  for (let i = 0; i < Math.min(upTo, MIGRATIONS.length); i++) {
    const target = i + 1;
    // IMMEDIATE takes the write lock first, so two processes starting at once never apply the same step twice.
    db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current >= target) return;
      db.exec(MIGRATIONS[i] as string);
      db.pragma(`user_version = ${target}`);
    }).immediate();
  }
}

/**
 * The spool files (relative to data_dir: `spool/<2 hex>/<24 hex>`) that a database file no one else uses names: a
 * backup's snapshot, whose bodies the backup must carry.
 */
export function spooledFilesOf(file: string): string[] {
  // Not readonly: a read-only connection to a WAL database leaves -wal/-shm files beside it; the last read-write
  // connection removes them when it closes. Only reads are made.
  const db = new Database(file, { fileMustExist: true });
  try {
    const refs = db
      .prepare(`SELECT body_ref FROM messages WHERE body_ref GLOB 'spool:*' UNION SELECT body_ref FROM inbound_quarantine WHERE body_ref GLOB 'spool:*'`)
      .pluck()
      .all() as string[];
    return refs.map((r) => `spool/${r.slice('spool:'.length)}`).sort();
  } finally {
    db.close();
  }
}

/** Liveness probe for /healthz: a trivial read. */
export function pingDatabase(db: Db): boolean {
  return (db.prepare('SELECT 1 AS ok').get() as { ok: number }).ok === 1;
}

/**
 * Copies the live database to `target` with SQLite's online backup API (sqlite.org/backup.html): pages are copied
 * in steps and the copy restarts when another connection writes, so the result is one consistent snapshot while a
 * running server goes on writing. `target` must not exist.
 */
export async function backupDatabase(db: Db, target: string): Promise<void> {
  if (fs.existsSync(target)) throw new Error(`${target} already exists`);
  await db.backup(target);
}

/**
 * Checks a database file that no one has open (a backup before it is restored): SQLite's integrity_check answers
 * "ok" and its schema is one this version knows. Returns the problem in words, or undefined when it is sound.
 */
export function checkDatabaseFile(file: string): string | undefined {
  let db: Db | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const rows = db.pragma('integrity_check') as { integrity_check: string }[];
    const problems = rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
    if (problems.length > 0) return `integrity_check failed: ${problems.slice(0, 3).join('; ')}`;
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) return `schema version ${version} is newer than this Sluice knows (${MIGRATIONS.length}): restore with the version that made it`;
    return undefined;
  } catch (err) {
    return `${(err as Error).message}${(err as { code?: string }).code ? ` (${(err as { code?: string }).code})` : ''}`;
  } finally {
    db?.close();
  }
}
