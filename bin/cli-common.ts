// Owns what every CLI command shares: the I/O seam, the usage error, the parsed options and argument checks.
import type { parseArgs } from 'node:util';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { Store } from '../storage/ports/store.js';

/** Where the CLI writes and what it reads; tests pass their own. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  now?: () => number;
  /** For `serve`: resolves when the process should stop (defaults to SIGINT/SIGTERM). */
  stopSignal?: Promise<void>;
  /** For `quarantine release`: the queue-backed inbound relay over this store (tests pass a recorder). */
  relayInbound?: (store: Store) => InboundRelay;
}

/** A malformed command line: reported with a pointer to `sluice help`, exit code 2. */
export class UsageError extends Error {}

/** Every option `sluice` takes (node:util parseArgs; strict: anything else is a usage error). */
export const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  version: { type: 'boolean', short: 'V' },
  json: { type: 'boolean' },
  handle: { type: 'string' },
  company: { type: 'string' },
  account: { type: 'string' },
  scope: { type: 'string' },
  id: { type: 'string' },
  limit: { type: 'string' },
  domain: { type: 'string' },
  all: { type: 'boolean' },
  label: { type: 'string' },
  sender: { type: 'string' },
  policy: { type: 'string' },
  pool: { type: 'string' },
  condition: { type: 'string' },
  interval: { type: 'string' },
  admins: { type: 'string' },
  webhook: { type: 'string' },
  email: { type: 'string' },
  only: { type: 'string' },
  hostname: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  campaign: { type: 'string' },
  spam: { type: 'string', multiple: true },
  ham: { type: 'string', multiple: true },
  'as-spam': { type: 'boolean' },
  inbound: { type: 'boolean' },
  rcpt: { type: 'string' },
  subject: { type: 'string' },
  client: { type: 'string' },
  'message-id': { type: 'string' },
  verdict: { type: 'string' },
  subscription: { type: 'string' },
  to: { type: 'string' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The options of one invocation as parsed (what the commands of bin/cli-commands.ts read). */
export type CliOptionValues = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

/** The options `runCli` parses (node:util parseArgs), as the command functions read them. */
export type Opts = {
  domain?: string;
  handle?: string;
  company?: string;
  account?: string;
  scope?: string;
  id?: string;
  json?: boolean;
  limit?: string;
  all?: boolean;
  label?: string;
  hostname?: string;
  start?: string;
  end?: string;
  interval?: string;
  admins?: string;
  campaign?: string;
  subscription?: string;
  sender?: string;
  policy?: string;
  pool?: string;
  condition?: string;
  webhook?: string;
  email?: string;
};

/** The account named by --account, or a usage error / "no account" error. */
export async function requireAccount(store: Pick<AccountStore, 'findByHandle'>, handle: string | undefined) {
  if (!handle) throw new UsageError('--account H is required');
  const account = await store.findByHandle(handle);
  if (!account) throw new Error(`no account "${handle}"`);
  return account;
}

/** A positive integer id, or a usage error. */
export function requireId(raw: string | undefined): number {
  const id = Number(raw);
  if (!raw || !Number.isInteger(id) || id < 1) throw new UsageError('--id N (a positive integer) is required');
  return id;
}

/**
 * Tab-separated lines under one line of column names, as a list command prints its rows (`cut -f` takes them, a
 * reader knows what each is); nothing at all when there are none (the command says so in its own words).
 */
export const headed = (columns: readonly string[], lines: string): string => (lines === '' ? '' : `${columns.join('\t')}\n${lines}`);

/** Epoch milliseconds as ISO 8601, or null. */
export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * A database URL fit to print: without its password (a command shown to be run gets it from PGPASSWORD or
 * ~/.pgpass, as pg_dump and psql do).
 */
export function withoutPassword(url: string): string {
  const u = new URL(url);
  u.password = '';
  return u.href;
}
