// Owns the PostgreSQL connection pool of one process: typed queries, one-transaction units, the type parsers that make
// rows come back as the ports' JavaScript types (numbers, booleans, parsed JSON, Buffers), and clear start-up errors.
import pg from 'pg';
import { StorageUnavailable } from '../ports/health.js';

// int8 (bigint: ids and millisecond timestamps) as numbers: every value Sluice stores fits in 2^53 (ms until year
// 287,396), and the ports speak numbers on both backends. numeric stays text unless a column casts it.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.FLOAT8, (v) => Number(v));

/** Statement texts that run as named prepared statements (see `statement`), by text: their names. */
const prepared = new Map<string, string>();
/** Most distinct texts prepared: a text built per call (a list of placeholders) must not grow every connection. */
const MAX_PREPARED = 500;
let names = 0;

/**
 * The query config of `sql`: a statement with parameters runs as a named prepared statement, parsed and planned once
 * per connection instead of at every call (pg sends Parse only the first time a connection sees the name): measured
 * on bench:outbound, PostgreSQL's CPU per message fell from 9.3–12.3 ms to 6.3 ms. Statements without parameters
 * (scripts of several, SAVEPOINT) stay simple queries.
 */
function statement(sql: string, params?: readonly unknown[]): pg.QueryConfig {
  if (!params || params.length === 0) return { text: sql };
  let name = prepared.get(sql);
  if (name === undefined) {
    if (prepared.size >= MAX_PREPARED) return { text: sql, values: params as unknown[] };
    name = `s${++names}`;
    prepared.set(sql, name);
  }
  return { name, text: sql, values: params as unknown[] };
}

/**
 * Sends one statement on `c`. A table changed under a prepared statement (another node migrated the schema) fails
 * it with 0A000 "cached plan must not change result type": the text gets a new name, so the next call parses it
 * afresh, and outside a transaction (`again`) the call itself runs once more.
 */
async function send(c: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[] | undefined, again: boolean): Promise<pg.QueryResult> {
  try {
    return await c.query(statement(sql, params));
  } catch (err) {
    if ((err as { code?: unknown }).code !== '0A000' || !prepared.has(sql)) throw err;
    prepared.set(sql, `s${++names}`);
    if (!again) throw err;
    return c.query(statement(sql, params));
  }
}

/** Runs one statement and returns its rows. */
export type Query = <R = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<R[]>;

/** One process's way into PostgreSQL: storage/postgres/ only (the dependency rule keeps `pg` here). */
export interface Pg {
  /** One statement on a pooled connection, in its own (autocommit) transaction. */
  query: Query;
  /** Like `query`, with the row count (UPDATE/DELETE without RETURNING). */
  exec(sql: string, params?: readonly unknown[]): Promise<number>;
  /**
   * Runs `fn` as one transaction on one connection (BEGIN … COMMIT; ROLLBACK when it throws, and the error goes on).
   * Every statement of a unit of work goes through the `q` it is given, never through `query`. `last`, when given,
   * runs after `fn` and goes out with the COMMIT: it must issue every statement before its first `await`.
   */
  tx<T>(fn: (q: Query, exec: (sql: string, params?: readonly unknown[]) => Promise<number>) => Promise<T>, last?: (q: Query) => Promise<unknown>): Promise<T>;
  /** A pooled connection of one's own for a while (a cursor streaming a body, LISTEN); released when `fn` settles. */
  withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /** The pool itself (sizes for health, LISTEN clients). */
  readonly pool: pg.Pool;
  /** Ends every connection. */
  close(): Promise<void>;
}

export interface PgOptions {
  /** `postgres://user:password@host:port/db?sslmode=…` (the password may come from PGPASSWORD instead). */
  url: string;
  /** Connections in this process's pool (storage.postgres_pool_size). */
  poolSize: number;
  /** Told the seconds each transaction took (the commit-latency metric). */
  onCommit?: (seconds: number) => void;
  /** Application name shown in pg_stat_activity. */
  applicationName?: string;
}

/** Connects a pool (no connection is made until the first query). */
export function createPg(opts: PgOptions): Pg {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize,
    application_name: opts.applicationName ?? 'sluice',
    // A server that does not answer must not hang a start or a request for ever.
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client's connection dropped by the server (a restart): the pool replaces it; the error is not fatal.
  pool.on('error', () => {});
  /**
   * A pooled connection for a unit or a cursor, watched while it is out: pg-pool listens for a connection's errors
   * only while it is idle, and a connection the server ends while it is checked out (57P01 at a restart or
   * failover, a reset) emits 'error' between statements, which unheard would end the process. Heard, the statement
   * in flight (if any) still rejects and is answered as storage unavailable; the connection is destroyed at release.
   */
  async function checkout(): Promise<{ client: pg.PoolClient; held: { release(broken: boolean): void } }> {
    const client = await pool.connect().catch(unavailable);
    let failed = false;
    const onError = () => {
      failed = true;
    };
    client.on('error', onError);
    return {
      client,
      held: {
        release(broken) {
          // A destroyed connection keeps the listener: it may still report its end.
          if (!broken && !failed) client.off('error', onError);
          client.release(broken || failed);
        },
      },
    };
  }
  const query: Query = async <R>(sql: string, params?: readonly unknown[]) =>
    (await send(pool, sql, params, true).catch(unavailable)).rows as R[];
  return {
    pool,
    query,
    async exec(sql, params) {
      return (await send(pool, sql, params, true).catch(unavailable)).rowCount ?? 0;
    },
    async tx(fn, last) {
      const { client, held } = await checkout();
      const started = performance.now();
      let broken = false;
      // Pipeline mode (pg's `pipeline` option) while the transaction runs: a statement goes to the server when it is
      // issued, not after the one before it has been answered and this event loop has had a turn to read that answer.
      // BEGIN goes with the first statements, `last` with the COMMIT, a group commit's units at once
      // (group-commit.ts). Measured on bench:outbound, a turn of a busy loop was 1.4–4 ms per statement. Off again
      // before release: every statement has been answered by then, and cursors (withClient) need it off.
      const c = client as pg.PoolClient & { pipeline: boolean };
      c.pipeline = true;
      try {
        const q: Query = async <R>(sql: string, params?: readonly unknown[]) =>
          (await send(client, sql, params, false)).rows as R[];
        const exec = async (sql: string, params?: readonly unknown[]) =>
          (await send(client, sql, params, false)).rowCount ?? 0;
        const [begun, done] = await Promise.allSettled([client.query('BEGIN'), fn(q, exec)]);
        if (begun.status === 'rejected') throw begun.reason;
        if (done.status === 'rejected') throw done.reason;
        const [finished, committed] = await Promise.allSettled([last?.(q), client.query('COMMIT')]);
        if (finished.status === 'rejected') throw finished.reason;
        if (committed.status === 'rejected') throw committed.reason;
        // PostgreSQL answers COMMIT of a transaction a statement failed in with ROLLBACK, not an error.
        if (committed.value.command !== 'COMMIT') throw new Error(`the transaction ended with ${committed.value.command}, not COMMIT`);
        opts.onCommit?.((performance.now() - started) / 1000);
        return done.value;
      } catch (err) {
        // A connection that failed mid-unit is destroyed, not handed to the next unit.
        broken = reasonOf(err) === 'cannot-open';
        if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
        unavailable(err);
      } finally {
        c.pipeline = false;
        held.release(broken);
      }
    },
    async withClient(fn) {
      const { client, held } = await checkout();
      try {
        return await fn(client);
      } finally {
        held.release(false);
      }
    },
    close: () => pool.end(),
  };
}

/**
 * Says in one line why a connection failed, naming the setting: what an operator reads at a failed start
 * (issue 33: a wrong URL, a refused password, an unreachable server → one line, exit 2).
 */
export function describeConnectError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  switch (e.code) {
    case '28P01':
    case '28000':
      return `the server refused the user or password (${e.message})`;
    case '3D000':
      return `${e.message}`;
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ETIMEDOUT':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot reach the server (${e.code}: ${e.message})`;
    default:
      return `cannot connect (${e.message ?? String(err)})`;
  }
}

/** SQLSTATE classes and socket errors that mean "storage is unavailable", by the seam's reason (ports/health.ts). */
function reasonOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') {
    // pg's own "Connection terminated" errors carry no code.
    return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(String((err as Error)?.message)) ? 'cannot-open' : undefined;
  }
  if (code === '53100') return 'disk-full';
  if (code === '53200') return 'out-of-memory';
  if (code.startsWith('53') || code === '40001' || code === '40P01' || code === '55P03') return 'database-busy';
  if (code === '25006') return 'read-only';
  if (code.startsWith('58')) return 'io-error';
  if (code.startsWith('XX')) return 'corrupt';
  if (code.startsWith('08') || code.startsWith('57P') || /^E[A-Z]+$/.test(code)) return 'cannot-open';
  return undefined;
}

/** Whether `err` (raw, or as StorageUnavailable) is a deadlock or a serialization failure: the unit may run again. */
export function isPgRetryable(err: unknown): boolean {
  const code = err instanceof StorageUnavailable ? err.code : (err as { code?: unknown } | undefined)?.code;
  return code === '40P01' || code === '40001';
}

/** Tries of a unit or statement that met a deadlock or a serialization failure before its error goes on. */
export const RETRY_TRIES = 4;

/** Runs `fn` (safe to run again: a transaction, or one autocommit statement) once more while it is retryable. */
export async function retryPg<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= RETRY_TRIES || !isPgRetryable(err)) throw err;
    }
  }
}

/** Rethrows a failure of the database as StorageUnavailable (callers answer 451/503), anything else as it is. */
function unavailable(err: unknown): never {
  if (err instanceof StorageUnavailable) throw err;
  const reason = reasonOf(err);
  if (reason === undefined) throw err;
  throw new StorageUnavailable(reason, String((err as { code?: unknown }).code ?? 'ECONNRESET'), { cause: err });
}
