// Owns starting several `sluice serve` nodes on one PostgreSQL database for the multi-node tests (issue 33 item 8),
// and the REST send those tests repeat.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { freshDatabase } from './pg-cluster.js';
import { BIN, firstKey, serveBinary } from './serve-binary.js';
import { tempDir, testEnv } from './stack.js';

const run = promisify(execFile);

/** One running node: its process (serveBinary's), its `listening` line and its data_dir. */
export type PgNode = ReturnType<typeof serveBinary> & { info: { http: string; mx: string; submission: string }; dir: string };

/** Nodes on one database, the `default` account's API key and the database URL. */
export interface PgNodes {
  nodes: PgNode[];
  key: string;
  url: string;
  /** The database's name (for psql). */
  database: string;
  /** Runs `sluice ARGS` as the first node would (its data_dir, the same database): its stdout. */
  cli(args: string[]): Promise<string>;
}

/**
 * Starts `count` nodes on a fresh database (or `opts.url`) with `env` on top of the PostgreSQL settings: the first
 * alone (it makes the schema and the first key in its data_dir), then the others at once.
 */
export async function startPgNodes(t: Test, count: number, env: Record<string, string>, opts: { url?: string } = {}): Promise<PgNodes> {
  const url = opts.url ?? (await freshDatabase());
  const all = { SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: url, SLUICE_STORAGE_POSTGRES_POOL_SIZE: '4', ...env };
  const start = async (): Promise<PgNode> => {
    const dir = tempDir(t);
    const node = serveBinary(t, dir, all);
    return Object.assign(node, { info: await node.listening, dir });
  };
  const first = await start();
  const rest = await Promise.all(Array.from({ length: count - 1 }, start));
  const cli = async (args: string[]) =>
    (await run(process.execPath, [BIN, ...args], { env: { ...process.env, ...testEnv(first.dir), ...all } })).stdout;
  return { nodes: [first, ...rest], key: firstKey(first.dir), url, database: new URL(url).pathname.slice(1), cli };
}

/**
 * POST /tx/v1/send-async through `node` of one text message to `to` with `subject`; resolves with the response
 * (`signal` aborts it: a test bounds a request that might hang).
 */
export function sendThrough(node: { info: { http: string } }, key: string, m: { to: string; subject: string; from?: string; text?: string }, signal?: AbortSignal): Promise<Response> {
  return fetch(`http://${node.info.http}/tx/v1/send-async`, {
    method: 'POST',
    ...(signal ? { signal } : {}),
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      personalizations: [{ to: [{ email: m.to }] }],
      from: { email: m.from ?? 'app@sender.test' },
      subject: m.subject,
      content: [{ type: 'text/plain', value: m.text ?? 'one of many' }],
    }),
  });
}

/** The zone of a remote domain `rcpt.test` whose MX is 127.0.0.1 (the sink, on the port outbound.mx_port names). */
export const RCPT_ZONE = { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } };

/**
 * Provisions `domain` for inbound relay to 127.0.0.1:`downstreamPort` through `node`'s API, with an inbound key the
 * CLI makes for the `default` account (abusePolicy flag: nothing is refused for its content).
 */
export async function provisionInboundThrough(c: PgNodes, node: { info: { http: string } }, domain: string, downstreamPort: number): Promise<void> {
  const { key } = JSON.parse(await c.cli(['keys', 'create', '--account', 'default', '--scope', 'inbound', '--json'])) as { key: string };
  const res = await fetch(`http://${node.info.http}/inbound/v1/domains`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      domain,
      subscriptionHandle: 'default',
      settings: { abusePolicy: 'flag' },
      downstreamAddresses: [{ priority: 10, weight: 1, port: downstreamPort, target: '127.0.0.1' }],
    }),
  });
  if (res.status !== 201) throw new Error(`provision ${domain}: ${res.status} ${await res.text()}`);
}
