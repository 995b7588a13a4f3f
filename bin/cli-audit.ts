// Owns the CLI's side of the audit log (issue 38 item 3): which commands change something (each recorded once it
// succeeded, by runCommand in cli-commands.ts) and `sluice audit`, the operator's listing of every entry.
import os from 'node:os';
import { actorLabel } from '../control-api/console/audit-actor.js';
import type { Store } from '../storage/ports/store.js';
import { iso, requireAccount, UsageError, type CliIo, type CliOptionValues } from './cli-common.js';

/**
 * The commands (and subcommands) that change the store. Reads (list, show, stats, verify, metrics, log, audit) are
 * not recorded; `scan-policy` and `digest` only when they set something. `restore` and `store copy` replace or fill a
 * whole database while no server runs, and are not in it.
 */
const CHANGES: Record<string, readonly string[]> = {
  accounts: ['create', 'scan-policy', 'set-pool'],
  keys: ['create', 'revoke'],
  'smtp-passwords': ['create', 'delete'],
  lockdown: ['allow', 'deny'],
  'inbound-domains': ['provision', 'digest'],
  'inbound-recipients': ['remove'],
  queue: ['retry', 'delete'],
  quarantine: ['release', 'delete'],
  filter: ['train', 'reset'],
  console: ['token', 'revoke', 'totp'],
  senders: ['unblock'],
  monitors: ['create', 'delete'],
  'signing-key': ['rotate'],
};

/** The command as recorded (`keys revoke`, `console totp enroll`), or undefined when it changes nothing. */
export function cliChange(command: string, sub: string | undefined, rest: readonly string[], opts: CliOptionValues): string | undefined {
  if (sub === undefined || !CHANGES[command]?.includes(sub)) return undefined;
  if (command === 'accounts' && sub === 'scan-policy' && opts.policy === undefined) return undefined;
  if (command === 'inbound-domains' && sub === 'digest' && opts.interval === undefined && opts.admins === undefined) return undefined;
  return command === 'console' && sub === 'totp' ? `console totp ${rest[0] ?? ''}`.trim() : `${command} ${sub}`;
}

/** Who runs the CLI: the OS user (os.userInfo), else $USER, else the uid. */
export function cliUser(env: NodeJS.ProcessEnv): string {
  try {
    return os.userInfo().username;
  } catch {
    return env.USER ?? `uid ${process.getuid?.() ?? '?'}`;
  }
}

/** The target's ids a command names (never a secret: handles, ids, domains, addresses), or null. */
function targetOf(rest: readonly string[], opts: CliOptionValues): string | null {
  const parts = [
    opts.account !== undefined ? `account=${opts.account}` : opts.handle !== undefined ? `account=${opts.handle}` : undefined,
    opts.id !== undefined ? `id=${opts.id}` : /^\d+$/.test(rest[0] ?? '') ? `id=${rest[0]}` : undefined,
    rest[0] === 'operator' || rest[1] === 'operator' ? 'operator' : undefined,
    opts.all ? 'all' : undefined,
    opts.domain !== undefined ? `domain=${opts.domain}` : undefined,
    opts.email !== undefined ? `email=${opts.email}` : undefined,
    opts.sender !== undefined ? `sender=${opts.sender}` : undefined,
  ].filter((p): p is string => p !== undefined);
  return parts.length ? parts.join(' ') : null;
}

/** Appends the entry of a CLI command that succeeded (exit 0) and changed something; nothing for any other. */
export async function recordCli(
  store: Pick<Store, 'audit' | 'accounts'>,
  o: { command: string; sub: string | undefined; rest: readonly string[]; opts: CliOptionValues; exitCode: unknown; env: NodeJS.ProcessEnv; now: () => number },
): Promise<void> {
  const action = o.exitCode === 0 ? cliChange(o.command, o.sub, o.rest, o.opts) : undefined;
  if (!action) return;
  const handle = o.opts.account ?? o.opts.handle;
  const account = handle === undefined ? undefined : await store.accounts.findByHandle(handle);
  await store.audit.append({
    at: o.now(),
    via: 'cli',
    actorKind: 'cli',
    actor: cliUser(o.env),
    accountId: account?.id ?? null,
    keyId: null,
    action,
    target: targetOf(o.rest, o.opts),
    address: 'local',
    status: 0,
  });
}

/** `sluice audit [--account H] [--start T] [--end T] [--limit N] [--json]`: entries newest first, every account's or one's. */
export async function auditCommand(sub: string | undefined, store: Pick<Store, 'audit' | 'accounts'>, opts: CliOptionValues, io: CliIo): Promise<number> {
  if (sub !== undefined) throw new UsageError(`sluice audit takes options only, not "${sub}"`);
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 9999) throw new UsageError('--limit must be an integer from 1 to 9999');
  // Imported here: cli-engagement.js loads the API's schemas, which every other command (queue list) would pay for.
  const { when } = await import('./cli-engagement.js');
  const since = when('start', opts.start);
  const until = when('end', opts.end);
  if (since !== undefined && until !== undefined && since >= until) throw new UsageError('--start must be before --end');
  const account = opts.account === undefined ? undefined : await requireAccount(store.accounts, opts.account);
  const rows = await store.audit.list({ ...(account ? { accountId: account.id, withSubAccounts: true } : {}), since, until, limit });
  const handles = new Map<number, string>();
  for (const r of rows) {
    if (r.accountId !== null && !handles.has(r.accountId)) handles.set(r.accountId, (await store.accounts.findById(r.accountId))?.handle ?? String(r.accountId));
  }
  const shown = rows.map((r) => ({
    id: r.id,
    at: iso(r.at),
    via: r.via,
    who: actorLabel(r.actorKind, r.actor),
    key_id: r.keyId,
    account: r.accountId === null ? null : handles.get(r.accountId)!,
    action: r.action,
    target: r.target,
    address: r.address,
    status: r.status,
  }));
  if (opts.json) {
    io.stdout(JSON.stringify(shown) + '\n');
    return 0;
  }
  if (shown.length === 0) {
    io.stdout('no audit entries\n');
    return 0;
  }
  const table = [['TIME', 'VIA', 'WHO', 'ACCOUNT', 'ACTION', 'TARGET', 'FROM', 'STATUS'], ...shown.map((r) => [r.at ?? '', r.via, r.who, r.account ?? '-', r.action, r.target ?? '-', r.address, String(r.status)])];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  io.stdout(table.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n');
  return 0;
}
