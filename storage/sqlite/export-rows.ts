// Owns reading a stopped SQLite data_dir for `sluice store copy`: its tables, its rows normalised to the target's
// column kinds (0/1 → booleans, JSON text → values, integers exact), and its spooled bodies as streams.
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import type { ColumnKind, CopyColumn, CopyValue } from '../table-copy.js';
import { spoolKey } from './bodies.js';
import { databasePath } from './database.js';
import { MIGRATIONS } from './migrations.js';
import { createSpool } from './spool.js';

/** The source of a copy: a data_dir's database opened for reading only, and its spool. */
export interface SqliteExport {
  /** The data_dir's schema version (PRAGMA user_version). */
  readonly version: number;
  /** Every table of the database (FTS5 shadow tables included) with its columns' names. */
  tables(): Map<string, string[]>;
  /** The rows of `table`, in `key` order, as values of the target's `columns` kinds; throws on a value that does not fit. */
  rows(table: string, columns: readonly CopyColumn[], key: readonly string[]): IterableIterator<CopyValue[]>;
  /** The spool keys (`spool:<2 hex>/<24 hex>`) the rows of `messages` and `inbound_quarantine` name, each once. */
  spooledBodies(): string[];
  /** A spooled body's bytes as a stream; rejects (ENOENT) when its file is missing. */
  openSpooled(ref: string): Promise<Readable>;
  close(): void;
}

/** An error in the data the copy refuses to carry over (a value of the wrong type): the copy stops, nothing is written. */
export class ExportError extends Error {}

/**
 * Opens the database of `dataDir` for a copy. It must exist and be at this Sluice's schema version (an older one is
 * migrated by starting this version's `sluice serve` on it once). The connection is read-only in effect (query_only)
 * and reads one snapshot: every table is read inside one read transaction.
 */
export function openSqliteExport(dataDir: string): SqliteExport {
  const file = databasePath(dataDir);
  if (!fs.existsSync(file)) throw new ExportError(`data_dir ${dataDir} holds no SQLite database (${path.basename(file)}): nothing to copy`);
  // Not `readonly`: a read-only connection to a WAL database cannot make the -shm file it needs (see spooledFilesOf).
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('query_only = true');
    db.defaultSafeIntegers(true);
    const version = Number(db.pragma('user_version', { simple: true }));
    if (version !== MIGRATIONS.length) {
      throw new ExportError(
        `data_dir ${dataDir} has schema version ${version}, this Sluice ${MIGRATIONS.length}: ` +
          (version < MIGRATIONS.length ? 'start this version of sluice serve on it once (it migrates at start), stop it, then copy' : 'copy with the Sluice that made it'),
      );
    }
    db.exec('BEGIN');
  } catch (err) {
    db.close();
    throw err;
  }
  const spool = createSpool({ dir: path.join(dataDir, 'spool') });
  const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
  return {
    version: MIGRATIONS.length,
    tables() {
      const names = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").pluck().all() as string[];
      return new Map(names.map((n) => [n, (db.prepare(`PRAGMA table_info(${quote(n)})`).all() as { name: string }[]).map((c) => c.name)]));
    },
    *rows(table, columns, key) {
      const order = key.length > 0 ? ` ORDER BY ${key.map(quote).join(', ')}` : '';
      const stmt = db.prepare(`SELECT ${columns.map((c) => quote(c.name)).join(', ')} FROM ${quote(table)}${order}`).raw(true);
      for (const raw of stmt.iterate() as IterableIterator<unknown[]>) {
        yield raw.map((v, i) => normalise(v, columns[i]!.kind, table, columns[i]!.name));
      }
    },
    spooledBodies() {
      return db
        .prepare(`SELECT body_ref FROM messages WHERE body_ref GLOB 'spool:*' UNION SELECT body_ref FROM inbound_quarantine WHERE body_ref GLOB 'spool:*' ORDER BY 1`)
        .pluck()
        .all() as string[];
    },
    openSpooled: (ref) => spool.open({ key: spoolKey(ref) ?? '' }),
    close() {
      if (db.inTransaction) db.exec('COMMIT');
      db.close();
    },
  };
}

/** One SQLite value as the target column's kind; a value that does not fit is refused (it would be lost or altered). */
function normalise(v: unknown, kind: ColumnKind, table: string, column: string): CopyValue {
  if (v === null) return null;
  const bad = (): never => {
    const shown = Buffer.isBuffer(v) ? `a ${v.length}-byte blob` : JSON.stringify(typeof v === 'bigint' ? String(v) : v)?.slice(0, 60);
    throw new ExportError(`${table}.${column} holds ${shown}, which is not ${kind === 'integer' ? 'an' : 'a'} ${kind} value: nothing was copied`);
  };
  switch (kind) {
    case 'boolean':
      // SQLite keeps booleans as 0/1 (STRICT tables with CHECK (x IN (0, 1))).
      return v === 0n || v === 1n ? v === 1n : bad();
    case 'integer':
      if (typeof v === 'bigint') return v.toString();
      return typeof v === 'number' && Number.isInteger(v) ? String(v) : bad();
    case 'float':
      return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : bad();
    case 'json':
      if (typeof v !== 'string') return bad();
      try {
        return { json: JSON.parse(v) as unknown };
      } catch {
        return bad();
      }
    case 'bytes':
      return Buffer.isBuffer(v) ? v : bad();
    case 'text':
      if (typeof v === 'string') return v;
      return typeof v === 'bigint' || typeof v === 'number' ? String(v) : bad();
  }
}
