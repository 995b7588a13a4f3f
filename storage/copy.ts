// Owns `sluice store copy`: moves a stopped SQLite data_dir (every table, every body) into an empty PostgreSQL
// database in one transaction, table by table as the target's schema describes them, and verifies it before commit.
import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import { openPgImport, type ImportTx } from './postgres/import-rows.js';
import { ExportError, openSqliteExport, type SqliteExport } from './sqlite/export-rows.js';
import { TableDigest, type CopiedTable, type CopyTable, type CopyValue } from './table-copy.js';

/** What is deliberately not copied, and why (the report lists these; anything else unmatched is refused). */
export const NOT_COPIED: readonly { name: string; why: string }[] = [
  { name: 'cache_generations', why: "SQLite's read-cache counters (migration 23); PostgreSQL nodes read the tables directly" },
  { name: 'smtp_log_subject*', why: "SQLite's FTS5 index of smtp_log subjects; PostgreSQL indexes the copied smtp_log rows itself (pg_trgm)" },
  { name: 'job_leads', why: 'leads of the stopped processes; the new nodes take them afresh' },
  { name: 'webhooks.events_after', why: 'unread since SQLite migration 25 (enrolments mark events instead)' },
];

/** SQLite tables the target has no counterpart of (NOT_COPIED's reasons); the FTS5 table comes with shadow tables. */
const SOURCE_ONLY = /^(cache_generations|smtp_log_subject(_\w+)?)$/;
/** Tables on both sides that are not copied. */
const SKIPPED = new Set(['job_leads']);
/** Columns of the source the target does not have. */
const DROPPED_COLUMNS = new Set(['webhooks.events_after']);
/** Target tables filled from the spool's files, not from a table: large bodies as chunk rows. */
const BODY_TABLES = new Set(['body_blobs', 'body_chunks']);
/** Columns naming a body: a spooled one (`spool:…`) is renamed to its chunked copy (`chunks:…`). */
const BODY_REFS = new Set(['messages.body_ref', 'inbound_quarantine.body_ref']);
/**
 * More values an identity must pass than its own column's: a new webhook enrolment must exceed every enrolment a
 * batch still names (SQLite numbers them per account, 1 + the account's highest; PostgreSQL from one sequence).
 */
const IDENTITY_FLOORS = { 'webhooks.enrolment': ['(SELECT max(enrolment) FROM webhook_batches)'] };

/** The copy found the two sides do not fit, or the read back differs: nothing was committed. */
export class CopyFailed extends Error {}

/** What `copyStore` copied and verified. */
export interface CopyReport {
  /** Schema versions: the data_dir's (SQLite) and the database's (PostgreSQL). */
  sourceVersion: number;
  targetVersion: number;
  /** Each copied table, in the order written, with the rows and value bytes both sides agree on. */
  tables: CopiedTable[];
  /** The spooled bodies (files in data_dir/spool), now chunked rows: how many, their bytes, the digest of their digests. */
  bodies: CopiedTable;
  notCopied: typeof NOT_COPIED;
}

/**
 * Copies the SQLite store of `dataDir` (no process may be using it: the caller checks) into the PostgreSQL database
 * at `url`, which must be empty (its schema is made when absent). One transaction: it commits only after every
 * table's row count and digest and every body's SHA-256 read back from PostgreSQL equal the source's, so a failure
 * leaves the database as it was. Bodies stream, one chunk in memory at a time.
 */
export async function copyStore(dataDir: string, url: string): Promise<CopyReport> {
  const source = openSqliteExport(dataDir);
  try {
    const target = await openPgImport(url);
    try {
      const tables = plan(source.tables(), target.tables);
      const { copied, bodies } = await target.copy((tx) => copyAll(tx, source, tables));
      return { sourceVersion: source.version, targetVersion: target.schema, tables: copied, bodies, notCopied: NOT_COPIED };
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}

/** The target tables to copy, after checking that every table and column of each side is accounted for. */
function plan(source: Map<string, string[]>, target: readonly CopyTable[]): CopyTable[] {
  const problems: string[] = [];
  const names = new Set(target.map((t) => t.name));
  for (const [name, cols] of source) {
    if (!names.has(name)) {
      if (!SOURCE_ONLY.test(name)) problems.push(`table ${name} has no counterpart in PostgreSQL`);
      continue;
    }
    const have = new Set(target.find((t) => t.name === name)!.columns.map((c) => c.name));
    for (const c of cols) if (!have.has(c) && !DROPPED_COLUMNS.has(`${name}.${c}`)) problems.push(`column ${name}.${c} has no counterpart in PostgreSQL`);
  }
  const out: CopyTable[] = [];
  for (const t of target) {
    if (BODY_TABLES.has(t.name) || SKIPPED.has(t.name)) continue;
    const cols = source.get(t.name);
    if (!cols) {
      problems.push(`PostgreSQL's table ${t.name} has no counterpart in the data_dir`);
      continue;
    }
    for (const c of t.columns) if (!cols.includes(c.name)) problems.push(`PostgreSQL's column ${t.name}.${c.name} has no counterpart in the data_dir`);
    out.push(t);
  }
  if (problems.length > 0) throw new CopyFailed(`the schemas do not fit (${problems.join('; ')}): nothing was copied`);
  return out;
}

/** A stream's chunks, hashed as they pass. */
async function* hashed(stream: Readable, hash: crypto.Hash): AsyncGenerator<Buffer> {
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    yield chunk as Buffer;
  }
}

/** Inside the copy's transaction: bodies, then tables (parents first), identities, then every read back. */
async function copyAll(tx: ImportTx, source: SqliteExport, tables: readonly CopyTable[]): Promise<{ copied: CopiedTable[]; bodies: CopiedTable }> {
  // Spooled bodies first: the rows that name them are written with their new names.
  const renamed = new Map<string, { ref: string; sha256: string; size: number }>();
  for (const ref of source.spooledBodies()) {
    let stream: Readable;
    try {
      stream = await source.openSpooled(ref);
    } catch (err) {
      throw new CopyFailed(`the body ${ref} a message names is missing from data_dir/spool (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): nothing was copied`);
    }
    const hash = crypto.createHash('sha256');
    const written = await tx.writeBody(hashed(stream, hash));
    renamed.set(ref, { ...written, sha256: hash.digest('hex') });
  }

  const sent = new Map<string, TableDigest>();
  for (const t of tables) {
    const digest = new TableDigest();
    const refs = t.columns.map((c, i) => (BODY_REFS.has(`${t.name}.${c.name}`) ? i : -1)).filter((i) => i >= 0);
    const rows = function* (): Generator<CopyValue[]> {
      for (const row of source.rows(t.name, t.columns, t.key)) {
        for (const i of refs) {
          const v = row[i];
          if (typeof v === 'string' && v.startsWith('spool:')) row[i] = renamed.get(v)?.ref ?? v;
        }
        digest.add(row);
        yield row;
      }
    };
    try {
      await tx.insert(t, rows());
    } catch (err) {
      // A value PostgreSQL refuses (a NUL in text, a broken reference): the table is named, the transaction undone.
      if (err instanceof CopyFailed || err instanceof ExportError) throw err;
      throw new CopyFailed(`table ${t.name}: ${(err as Error).message}; nothing was copied`, { cause: err });
    }
    sent.set(t.name, digest);
  }
  await tx.advanceIdentities(IDENTITY_FLOORS);

  // Verify: what PostgreSQL holds now, read back, against what was read from SQLite.
  const copied: CopiedTable[] = [];
  for (const t of tables) {
    const mine = sent.get(t.name)!;
    const theirs = new TableDigest();
    await tx.readBack(t, (row) => theirs.add(row));
    if (theirs.rows !== mine.rows || theirs.hex() !== mine.hex()) {
      throw new CopyFailed(`table ${t.name} did not verify: ${mine.rows} rows sent, ${theirs.rows} read back${theirs.rows === mine.rows ? ' with other values' : ''}; nothing was copied`);
    }
    copied.push({ table: t.name, rows: mine.rows, bytes: mine.bytes, digest: mine.hex() });
  }
  const all = crypto.createHash('sha256');
  let bytes = 0;
  for (const [from, to] of renamed) {
    const hash = crypto.createHash('sha256');
    const size = await tx.readBody(to.ref, (chunk) => hash.update(chunk));
    const got = hash.digest('hex');
    if (size !== to.size || got !== to.sha256) throw new CopyFailed(`the body ${from} did not verify (${to.size} bytes sent, ${size} read back): nothing was copied`);
    all.update(got);
    bytes += size;
  }
  return { copied, bodies: { table: 'bodies', rows: renamed.size, bytes, digest: all.digest('hex') } };
}
