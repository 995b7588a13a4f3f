// Owns the engagement commands of the CLI: `sluice tracking-domains list|verify` and `sluice metrics …` as tables.
import { ApiError } from '../control-api/errors.js';
import { parseWhen } from '../control-api/schemas.js';
import {
  bucketStarts, buildReport, INTERVALS, isoTime, metricsWindow, rankSenders, REPORTS, senderTotals, type Interval, type ReportName,
} from '../mta/queue/metrics.js';
import { verificationToken, verifyHostname, VERIFY_LABEL, type TrackingDomainDeps } from '../mta/outbound/tracking-domains.js';
import { normaliseDomain } from '../filters/inbound-names.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { Metric, MetricStore } from '../storage/ports/metrics.js';
import type { TrackingDomainStore } from '../storage/ports/tracking-domains.js';
import { requireAccount, UsageError, type CliIo, type Opts } from './cli-common.js';

/** Rows of cells as left-aligned columns, two spaces apart. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] as number))).join('  ') + '\n').join('');
}

/** `sluice tracking-domains list [--account H]` and `verify --account H --hostname NAME` (read-only: PATCH activates). */
export async function trackingDomainsCommand(
  sub: string | undefined,
  accounts: AccountStore,
  domains: TrackingDomainStore,
  verifyDeps: () => TrackingDomainDeps,
  opts: Opts,
  io: CliIo,
): Promise<number> {
  if (sub === 'list') {
    const account = opts.account === undefined ? null : (await requireAccount(accounts, opts.account)).id;
    const rows = (await domains.listAll(account)).map((d) => ({
      account: d.handle, name: d.name, hostname: d.hostname, scope: d.scope, status: d.status, created_at: isoTime(d.created_at),
    }));
    if (opts.json) io.stdout(JSON.stringify(rows) + '\n');
    else if (rows.length === 0) io.stdout('no custom tracking domains\n');
    else io.stdout(table([['account', 'name', 'hostname', 'scope', 'status', 'created_at'], ...rows.map((r) => Object.values(r))]));
    return 0;
  }
  if (sub === 'verify') {
    const account = await requireAccount(accounts, opts.account);
    if (!opts.hostname) throw new UsageError('--hostname NAME is required');
    const hostname = normaliseDomain(opts.hostname);
    if (!hostname) throw new UsageError(`--hostname: "${opts.hostname}" is not a host name`);
    const deps = verifyDeps();
    const v = await verifyHostname(deps, account.id, hostname);
    const token = verificationToken(deps.secret, account.id, hostname);
    const registered = (await Promise.all((['click', 'open', 'unsubscribe'] as const).map((scope) => domains.find(account.id, hostname, scope))))
      .filter((d) => d !== undefined)
      .map((d) => ({ name: d.name, scope: d.scope, status: d.status }));
    const out = {
      hostname,
      account: account.handle,
      verified: v.ok,
      problems: v.ok ? [] : v.problems,
      txt_record_name: `${VERIFY_LABEL}.${hostname}`,
      txt_record_value: token,
      registered,
    };
    if (opts.json) {
      io.stdout(JSON.stringify(out) + '\n');
    } else {
      io.stdout(
        `${hostname} (account ${account.handle}): ${v.ok ? 'DNS verified' : 'DNS not verified'}\n` +
          out.problems.map((p) => `  - ${p}\n`).join('') +
          (v.ok ? '' : `  ${v.setup.instructions}\n`) +
          `registered: ${registered.length === 0 ? 'none' : registered.map((r) => `${r.name} (${r.scope}, ${r.status})`).join(', ')}\n`,
      );
    }
    return v.ok ? 0 : 1;
  }
  throw new UsageError('usage: sluice tracking-domains list|verify');
}

/** A time option as the API takes it; a usage error otherwise. */
export function when(name: string, value: string | undefined): number | undefined {
  if (value !== undefined && !/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$/.test(value)) {
    throw new UsageError(`--${name} must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ`);
  }
  try {
    return parseWhen(`--${name}`, value);
  } catch (err) {
    throw err instanceof ApiError ? new UsageError(err.errors[0] ?? `--${name}: not a valid date`) : err;
  }
}

/**
 * `sluice metrics engagement|performance|recipient-behaviour|volume --account H [--start T] [--end T] [--interval I]
 * [--campaign C] [--json]`: one row per bucket and a total row; `sluice metrics senders campaigns|sub-accounts
 * --account H [--start T] [--end T] [--limit N] [--json]`: the ranking. The same figures as GET /tx/v1/metrics/*.
 */
export async function metricsCommand(
  sub: string | undefined,
  rest: string[],
  accounts: AccountStore,
  rollup: MetricStore,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const account = () => requireAccount(accounts, opts.account);
  const window = () => {
    const w = metricsWindow(now(), when('start', opts.start), when('end', opts.end));
    if (!w.ok) throw new UsageError(w.error.replaceAll('end_time', '--end').replaceAll('start_time', '--start'));
    return w.window;
  };
  if (sub === 'senders') {
    const type = rest[0];
    if (type !== 'campaigns' && type !== 'sub-accounts') throw new UsageError('usage: sluice metrics senders campaigns|sub-accounts --account H');
    const a = await account();
    const asked = window();
    const limit = opts.limit === undefined ? 10 : Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
    const { rows, window: w } = type === 'campaigns'
      ? await senderTotals(rollup, 'campaigns', a.id, asked)
      : a.parent_id === null ? await senderTotals(rollup, 'subAccounts', a.id, asked) : { rows: [], window: asked };
    const ranked = rankSenders(rows, { limit, offset: 0, order: 'desc' });
    if (opts.json) {
      io.stdout(JSON.stringify({ start_time: isoTime(w.start), end_time: isoTime(w.end), ...ranked }) + '\n');
    } else if (ranked.senders.length === 0) {
      io.stdout(`no ${type} sent mail between ${isoTime(w.start)} and ${isoTime(w.end)}\n`);
    } else {
      io.stdout(table([
        ['name', 'processed', 'delivered', 'bounced', 'dropped'],
        ...ranked.senders.map((s) => [s.name, String(s.processed), String(s.delivered), String(s.bounced), String(s.dropped)]),
      ]));
    }
    return 0;
  }
  if (sub === undefined || !(sub in REPORTS)) {
    throw new UsageError(`usage: sluice metrics ${Object.keys(REPORTS).join('|')}|senders --account H`);
  }
  const a = await account();
  const interval = (opts.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw new UsageError(`--interval must be one of ${INTERVALS.join(', ')}`);
  const w = window();
  const starts = bucketStarts(w, interval);
  if (!starts.ok) throw new UsageError(starts.error.replace('interval:', '--interval:'));
  const fields: readonly Metric[] = REPORTS[sub as ReportName];
  const report = await buildReport(rollup, { accountId: a.id, campaign: opts.campaign ?? null, window: w, interval, starts: starts.starts, fields });
  if (opts.json) {
    io.stdout(JSON.stringify(report) + '\n');
    return 0;
  }
  const rows = starts.starts.map((s, i) => [isoTime(s), ...fields.map((f) => String(report.buckets[f]?.[i]?.count ?? 0))]);
  io.stdout(table([['period_start', ...fields], ...rows, ['total', ...fields.map((f) => String(report[f]))]]));
  return 0;
}
