// Owns writing a copy into PostgreSQL for `sluice store copy`: the target's tables read from information_schema, an
// empty database checked, rows and chunked bodies written in one transaction, read back for the digests, and the
// identity sequences moved past the copied ids.
import crypto from 'node:crypto';
import type { CopyColumn, CopyTable, CopyValue } from '../table-copy.js';
import { kindOf } from '../table-copy.js';
import { CHUNK_BYTES, CHUNKED, chunkKey, fixedChunks } from './bodies.js';
import { createPg, describeConnectError, type Pg, type Query } from './database.js';
import { migrate, MIGRATION_LOCK, SchemaTooNew } from './migrations.js';

/** A target the copy refuses (not empty, not reachable, tables of something else): nothing was written. */
export class ImportRefused extends Error {}

/**
 * Rows the schema itself inserts (schema/filtering-memory.ts: the global classifier model; schema/inbound.ts: the
 * default plan). An empty database holds just these; the copy replaces them with the source's own.
 */
const SEEDED: Readonly<Record<string, number>> = { bayes_models: 1, inbound_subscriptions: 1 };

/** Where the schema version lives (storage/postgres/migrations.ts): made by the migrations, never copied. */
const SCHEMA_TABLE = 'sluice_schema';
/** The schema's own bookkeeping (the schema version, read-cache.ts's versions): PostgreSQL's alone, never copied. */
const BOOKKEEPING = new Set([SCHEMA_TABLE, 'sluice_read_versions']);

/**
 * Insert batches stay under PostgreSQL's 65,535 parameters and hold at most about 4 MiB of values and 1000 rows.
 * Copying 100,000 events and 200,000 greylist triplets (one run each, load ~15 on 2 cores): 1000 rows a statement
 * 50 s and 305 MB peak RSS; only the parameter bound (~12,000 rows a statement) 59 s and 331 MB.
 */
const BATCH_BYTES = 4 * 1024 * 1024;
const MAX_PARAMS = 60_000;
const BATCH_ROWS = 1000;

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** One transaction of a copy: every write and read of it goes through these, committed only when `copy`'s fn returns. */
export interface ImportTx {
  /** Inserts `rows` (values in `table.columns` order), identity values as given. */
  insert(table: CopyTable, rows: Iterable<CopyValue[]>): Promise<void>;
  /** Reads every row of `table` back, normalised as the source's are, one cursor page at a time. */
  readBack(table: CopyTable, onRow: (row: CopyValue[]) => void): Promise<void>;
  /** Writes a large body as body_blobs/body_chunks rows (CHUNK_BYTES each, as bodies.ts reads them); its body_ref. */
  writeBody(chunks: AsyncIterable<Buffer>): Promise<{ ref: string; size: number }>;
  /** Reads a chunked body back, one chunk row at a time; resolves with its size. */
  readBody(ref: string, onChunk: (chunk: Buffer) => void): Promise<number>;
  /**
   * Moves each identity column's sequence past the highest value copied (and past `floors[table.column]`, SQL
   * expressions of other values the next identity must exceed), so the next insert never takes a copied id.
   */
  advanceIdentities(floors: Readonly<Record<string, readonly string[]>>): Promise<void>;
}

/** The target of a copy: an empty Sluice database at this version's schema. */
export interface PgImport {
  /** The schema version (after migrating). */
  readonly schema: number;
  /** The target's tables (the schema table left out), each after the tables it references. */
  readonly tables: readonly CopyTable[];
  /**
   * Runs `fn` in one transaction that holds the migration lock (a node starting meanwhile waits), after checking
   * that the database holds no data but the schema's seeds, which it clears. `fn` throwing rolls everything back.
   */
  copy<T>(fn: (tx: ImportTx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Connects to `url`, refuses a database holding tables of something other than Sluice, makes or migrates the schema
 * and describes its tables. Connection failures are ImportRefused with the reason in one line.
 */
export async function openPgImport(url: string): Promise<PgImport> {
  const pg = createPg({ url, poolSize: 2, applicationName: 'sluice store copy' });
  try {
    const present = await pg.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
    );
    if (present.length > 0 && !present.some((t) => t.table_name === SCHEMA_TABLE)) {
      const names = present.map((t) => t.table_name);
      throw new ImportRefused(`the database holds tables that are not Sluice's (${names.slice(0, 3).join(', ')}${names.length > 3 ? ', …' : ''}): copy into a new, empty database; nothing was copied`);
    }
    const { to } = await migrate(pg);
    const tables = await describe(pg);
    return { schema: to, tables, copy: (fn) => copyTx(pg, tables, fn), close: () => pg.close() };
  } catch (err) {
    await pg.close().catch(() => {});
    if (err instanceof ImportRefused) throw err;
    if (err instanceof SchemaTooNew) throw new ImportRefused(`${err.message}; nothing was copied`);
    throw new ImportRefused(`cannot use the target database: ${describeConnectError((err as { cause?: unknown }).cause ?? err)}`);
  }
}

/** The target's tables from information_schema, in an order where a table follows the tables it references. */
async function describe(pg: Pg): Promise<CopyTable[]> {
  const cols = await pg.query<{ table_name: string; column_name: string; data_type: string; is_identity: string }>(
    `SELECT c.table_name, c.column_name, c.data_type, c.is_identity FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
      WHERE c.table_schema = current_schema() ORDER BY c.table_name, c.ordinal_position`,
  );
  const keys = await pg.query<{ rel: string; col: string }>(
    `SELECT c.conrelid::regclass::text AS rel, a.attname AS col FROM pg_constraint c
       CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
      WHERE c.contype = 'p' AND c.connamespace = current_schema()::regnamespace ORDER BY rel, k.n`,
  );
  const refs = await pg.query<{ rel: string; ref: string }>(
    `SELECT DISTINCT conrelid::regclass::text AS rel, confrelid::regclass::text AS ref FROM pg_constraint
      WHERE contype = 'f' AND connamespace = current_schema()::regnamespace AND conrelid <> confrelid`,
  );
  const tables = new Map<string, CopyTable>();
  for (const c of cols) {
    if (BOOKKEEPING.has(c.table_name)) continue;
    const kind = kindOf(c.data_type);
    if (!kind) throw new ImportRefused(`${c.table_name}.${c.column_name} is of type ${c.data_type}, which the copy does not know; nothing was copied`);
    const t = tables.get(c.table_name) ?? { name: c.table_name, columns: [], key: [] };
    t.columns.push({ name: c.column_name, kind, sqlType: c.data_type, identity: c.is_identity === 'YES' });
    tables.set(c.table_name, t);
  }
  for (const k of keys) tables.get(k.rel)?.key.push(k.col);
  // Depth-first: each table after what it references (a cycle would have no order: refused rather than guessed).
  const out: CopyTable[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new ImportRefused(`the target's tables reference each other in a cycle through ${name}; nothing was copied`);
    state.set(name, 'visiting');
    for (const r of refs.filter((x) => x.rel === name)) if (tables.has(r.ref)) visit(r.ref);
    state.set(name, 'done');
    out.push(tables.get(name)!);
  };
  for (const name of [...tables.keys()].sort()) visit(name);
  return out;
}

/** The copy's transaction: the lock, the emptiness check, the seeds cleared, then `fn`. */
function copyTx<T>(pg: Pg, tables: readonly CopyTable[], fn: (tx: ImportTx) => Promise<T>): Promise<T> {
  return pg.tx(async (q) => {
    await q('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    const held: string[] = [];
    for (const t of tables) {
      const [row] = await q<{ more: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quote(t.name)} OFFSET ${SEEDED[t.name] ?? 0}) AS more`);
      if (row?.more) held.push(t.name);
    }
    if (held.length > 0) {
      throw new ImportRefused(
        `the database already holds data (in ${held.slice(0, 4).join(', ')}${held.length > 4 ? ', …' : ''}): copy into a new, empty database (createdb); nothing was copied`,
      );
    }
    for (const name of Object.keys(SEEDED)) await q(`DELETE FROM ${quote(name)}`);
    return fn(importTx(q));
  });
}

/** The parameter of one value for an insert. */
function param(v: CopyValue): unknown {
  if (v !== null && typeof v === 'object' && !Buffer.isBuffer(v)) return JSON.stringify(v.json);
  return v;
}

/** A value read back from PostgreSQL (integers selected as text), normalised as the source's. */
function readValue(v: unknown, c: CopyColumn): CopyValue {
  if (v === null || v === undefined) return null;
  switch (c.kind) {
    case 'json':
      return { json: v };
    case 'float':
      return Number(v);
    default:
      return v as CopyValue;
  }
}

function importTx(q: Query): ImportTx {
  let cursors = 0;
  return {
    async insert(table, rows) {
      const cols = table.columns;
      const head = `INSERT INTO ${quote(table.name)} (${cols.map((c) => quote(c.name)).join(', ')})${cols.some((c) => c.identity) ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES `;
      let params: unknown[] = [];
      let tuples: string[] = [];
      let bytes = 0;
      const flush = async () => {
        if (tuples.length === 0) return;
        await q(head + tuples.join(', '), params);
        params = [];
        tuples = [];
        bytes = 0;
      };
      for (const row of rows) {
        const at = params.length;
        tuples.push(`(${cols.map((c, i) => `$${at + i + 1}::${c.sqlType}`).join(', ')})`);
        for (const v of row) {
          params.push(param(v));
          bytes += Buffer.isBuffer(v) ? v.length : typeof v === 'string' ? v.length : 8;
        }
        if (bytes >= BATCH_BYTES || tuples.length >= BATCH_ROWS || params.length + cols.length > MAX_PARAMS) await flush();
      }
      await flush();
    },

    async readBack(table, onRow) {
      const cursor = `copy_read_${++cursors}`;
      const exprs = table.columns.map((c) => (c.kind === 'integer' ? `${quote(c.name)}::text` : quote(c.name)));
      // Tables with bytes hold bodies of up to 256 KiB a row: a page of 32 bounds what one fetch holds.
      const page = table.columns.some((c) => c.kind === 'bytes') ? 32 : 2000;
      await q(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${exprs.join(', ')} FROM ${quote(table.name)}`);
      for (;;) {
        const rows = await q<Record<string, unknown>>(`FETCH ${page} FROM ${cursor}`);
        for (const r of rows) onRow(table.columns.map((c) => readValue(r[c.name], c)));
        if (rows.length < page) break;
      }
      await q(`CLOSE ${cursor}`);
    },

    async writeBody(chunks) {
      const key = crypto.randomBytes(16).toString('hex');
      await q('INSERT INTO body_blobs (key, created_at, chunk_bytes) VALUES ($1, $2, $3)', [key, Date.now(), CHUNK_BYTES]);
      let seq = 0;
      let size = 0;
      for await (const { data } of fixedChunks(chunks)) {
        size += data.length;
        if (data.length > 0) await q('INSERT INTO body_chunks (key, seq, data) VALUES ($1, $2, $3)', [key, seq++, data]);
      }
      await q('UPDATE body_blobs SET size = $2 WHERE key = $1', [key, size]);
      return { ref: `${CHUNKED}${key}`, size };
    },

    async readBody(ref, onChunk) {
      const key = chunkKey(ref);
      const [blob] = await q<{ chunk_bytes: number; size: number }>('SELECT chunk_bytes, size FROM body_blobs WHERE key = $1 AND size IS NOT NULL', [key]);
      if (!blob) throw new Error(`${ref} was not written`);
      for (let seq = 0; seq < Math.ceil(blob.size / blob.chunk_bytes); seq++) {
        const [row] = await q<{ data: Buffer }>('SELECT data FROM body_chunks WHERE key = $1 AND seq = $2', [key, seq]);
        if (!row) throw new Error(`${ref} lacks its chunk ${seq}`);
        onChunk(row.data);
      }
      return blob.size;
    },

    async advanceIdentities(floors) {
      const tables = await q<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY 1, 2",
      );
      for (const { table_name: t, column_name: c } of tables) {
        const highest = [`(SELECT max(${quote(c)}) FROM ${quote(t)})`, ...(floors[`${t}.${c}`] ?? [])];
        // greatest() skips NULLs; an empty table (every value NULL) leaves its sequence where it starts.
        await q(`SELECT setval(pg_get_serial_sequence($1, $2), m) FROM (SELECT greatest(${highest.join(', ')}) AS m) s WHERE m IS NOT NULL`, [quote(t), c]);
      }
    },
  };
}
