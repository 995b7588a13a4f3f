// Owns the outbound abuse commands of the CLI: sender blocks, per-account scanning policy and alert monitors.
import { ALERT_CONDITION_NAMES, isAlertCondition, MAX_INTERVAL_HOURS, MIN_INTERVAL_HOURS } from '../filters/alert-conditions.js';
import { ApiError } from '../control-api/errors.js';
import { MAX_MONITORS, monitorTarget, renderAlert, renderMonitor } from '../control-api/routes/monitors.js';
import { SCAN_POLICIES, type ScanPolicy } from '../config/keys.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { AlertStore } from '../storage/ports/alerts.js';
import type { SenderAbuseStore } from '../storage/ports/sender-abuse.js';
import { headed, iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

function limitOf(opts: Opts): number {
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
  return limit;
}

/** `sluice senders list|unblock`: blocked sender identities; the operator's unblock ignores the API's delisting limit. */
export async function sendersCommand(
  sub: string | undefined,
  rest: string[],
  accounts: AccountStore,
  store: SenderAbuseStore,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  if (sub === 'list') {
    const account = opts.account === undefined ? undefined : await requireAccount(accounts, opts.account);
    const blocks = await store.listBlocks({ accountId: account?.id ?? null, all: !!opts.all, limit: limitOf(opts) });
    const handles = new Map<number, string>();
    for (const b of blocks) if (!handles.has(b.account_id)) handles.set(b.account_id, (await accounts.findById(b.account_id))?.handle ?? String(b.account_id));
    const rows = blocks.map((b) => ({
      account: handles.get(b.account_id) as string,
      sender_id: b.sender_id,
      envelope_sender: b.envelope_sender,
      message_id: b.message_id,
      reason: b.reason,
      blocked_at: iso(b.blocked_at),
      lifted_at: iso(b.lifted_at),
      lifted_by: b.lifted_by,
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : headed(
            ['ACCOUNT', 'SENDER', 'STATE', 'BLOCKED', 'REASON'],
            rows.map((r) => `${r.account}\t${r.sender_id}\t${r.lifted_at ? `lifted ${r.lifted_at} (${r.lifted_by})` : 'blocked'}\t${r.blocked_at}\t${r.reason}\n`).join(''),
          ) || 'no blocked sender identities\n',
    );
    return 0;
  }
  if (sub === 'unblock') {
    const account = await requireAccount(accounts, opts.account);
    const senderId = opts.sender ?? rest[0];
    if (!senderId) throw new UsageError('--sender SENDER_ID (account|x-authuser|user) is required');
    if (!await store.lift(account.id, senderId, 'operator', now())) throw new Error(`${senderId} is not blocked on account "${account.handle}"`);
    io.stdout(`unblocked ${senderId}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice senders list|unblock');
}

/** `sluice accounts scan-policy --account H [--policy enforce|monitor|off|default]`: shows or sets it. */
export async function scanPolicyCommand(accounts: AccountStore, store: SenderAbuseStore, defaultPolicy: ScanPolicy, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const account = await requireAccount(accounts, opts.account);
  if (opts.policy !== undefined) {
    if (opts.policy !== 'default' && !(SCAN_POLICIES as readonly string[]).includes(opts.policy)) {
      throw new UsageError(`--policy must be one of ${SCAN_POLICIES.join(', ')}, default`);
    }
    await store.setScanPolicy(account.id, opts.policy === 'default' ? null : (opts.policy as ScanPolicy), now());
  }
  const own = await store.scanPolicy(account.id);
  const parent = account.parent_id === null ? undefined : await store.scanPolicy(account.parent_id);
  const effective = own ?? parent ?? defaultPolicy;
  const source = own ? 'own' : parent ? 'parent' : 'filters.outbound_policy';
  io.stdout(opts.json ? JSON.stringify({ account: account.handle, policy: effective, source }) + '\n' : `${account.handle}\t${effective}\t(${source})\n`);
  return 0;
}

/** `sluice monitors list|create|delete|alerts`: an account's alert monitors (what /tx/v1/monitors manages). */
export async function monitorsCommand(sub: string | undefined, accounts: AccountStore, store: AlertStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const account = await requireAccount(accounts, opts.account);
  if (sub === 'list') {
    const rows = (await store.listMonitors(account.id)).map(renderMonitor);
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : headed(['ID', 'CONDITION', 'INTERVAL', 'DELIVERY', 'TO'], rows.map((m) => `${m.id}\t${m.condition}\t${m.interval_hours}h\t${m.delivery}\t${'webhook_url' in m ? m.webhook_url : m.email}\n`).join('')) || 'no monitors\n',
    );
    return 0;
  }
  if (sub === 'create') {
    if (!opts.condition || !isAlertCondition(opts.condition)) throw new UsageError(`--condition must be one of ${ALERT_CONDITION_NAMES.join(', ')}`);
    const hours = Number(opts.interval);
    if (!Number.isInteger(hours) || hours < MIN_INTERVAL_HOURS || hours > MAX_INTERVAL_HOURS) {
      throw new UsageError(`--interval must be a whole number of hours from ${MIN_INTERVAL_HOURS} to ${MAX_INTERVAL_HOURS}`);
    }
    if ((opts.webhook === undefined) === (opts.email === undefined)) throw new UsageError('give exactly one of --webhook URL and --email ADDRESS');
    const delivery = opts.webhook !== undefined ? ('webhook' as const) : ('email' as const);
    let target: string;
    try {
      target = monitorTarget({ delivery, webhook_url: opts.webhook, email: opts.email });
    } catch (err) {
      throw err instanceof ApiError ? new UsageError(err.errors.join('; ').replace(/^webhook_url/, '--webhook').replace(/^email/, '--email')) : err;
    }
    if ((await store.listMonitors(account.id)).length >= MAX_MONITORS) throw new Error(`account "${account.handle}" already has ${MAX_MONITORS} monitors`);
    const m = renderMonitor(await store.createMonitor({ accountId: account.id, condition: opts.condition, intervalHours: hours, delivery, target, now: now() }));
    io.stdout(opts.json ? JSON.stringify(m) + '\n' : `created monitor ${m.id}: ${m.condition} every ${m.interval_hours}h by ${m.delivery} to ${target}\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = requireId(opts.id);
    if (!await store.deleteMonitor(account.id, id)) throw new Error(`no monitor ${id} on account "${account.handle}"`);
    io.stdout(`deleted monitor ${id}\n`);
    return 0;
  }
  if (sub === 'alerts') {
    const monitorId = opts.id === undefined ? null : requireId(opts.id);
    const rows = (await store.listAlerts({ accountId: account.id, monitorId, limit: limitOf(opts) })).map(renderAlert);
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : headed(['ID', 'FIRED', 'CONDITION', 'SENDER', 'STATE'], rows.map((a) => `${a.id}\t${a.fired_at}\t${a.payload.condition_name}\t${a.sender_id}\t${a.state}\n`).join('')) || 'no alerts\n',
    );
    return 0;
  }
  throw new UsageError('usage: sluice monitors list|create|delete|alerts');
}
