// Owns `sluice quarantine`: list, release (through the durable queue) and delete quarantined inbound messages.
import { domainToASCII } from 'node:url';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import { releaseQuarantined } from '../mta/inbound/quarantine-release.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createQueue } from '../mta/queue/queue.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import { QUARANTINE_LEASE_MS, quarantineStatus, type QuarantineStore } from '../storage/ports/quarantine.js';
import type { Store } from '../storage/ports/store.js';
import { iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

/**
 * The inbound relay over this store: a release is committed to the durable queue, and a running server's worker
 * sees the commit (the Queue port's `changes`) and delivers it to the domain's downstreams.
 */
export function queueRelay(store: Store, hostname: string, now: () => number): InboundRelay {
  const queue = createQueue({
    store: store.queue,
    bodies: store.bodies,
    handleOf: async () => '',
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
  });
  return createInboundRelay({ queue, hostname });
}

export async function quarantineCommand(
  sub: string | undefined,
  rest: string[],
  accounts: AccountStore,
  store: QuarantineStore,
  relay: InboundRelay,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const idArg = () => requireId(rest[0] ?? opts.id);
  if (sub === 'list') {
    const limit = opts.limit === undefined ? 100 : Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
    const account = opts.account === undefined ? null : (await requireAccount(accounts, opts.account)).id;
    const domain = opts.domain === undefined ? undefined : domainToASCII(opts.domain.trim().toLowerCase().replace(/\.$/, ''));
    const page = await store.list({ accountId: account, domain, limit, offset: 0 }, now());
    const rows = page.rows.map((r) => ({
      id: r.id,
      status: quarantineStatus(r, now(), QUARANTINE_LEASE_MS),
      domain: r.domain,
      sender: r.mail_from,
      rcpt_to: JSON.parse(r.rcpt_to) as string[],
      subject: r.subject,
      score: r.score,
      created_at: iso(r.created_at),
      expires_at: iso(r.expires_at),
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : rows
            .map((r) => `${r.id}\t${r.status}\t${r.created_at}\t${r.score}\t<${r.sender}> -> ${r.rcpt_to.map((x) => `<${x}>`).join(',')}\t${r.subject ?? ''}\n`)
            .join('') || 'quarantine is empty\n',
    );
    return 0;
  }
  if (sub === 'release') {
    const id = idArg();
    const res = await releaseQuarantined({ store, relay, now }, null, id);
    if (!res.ok) {
      const why = {
        'not-found': `no quarantined message ${id}`,
        released: `quarantined message ${id} was already released`,
        'in-progress': `quarantined message ${id} is being released`,
        'domain-gone': `the domain of quarantined message ${id} is no longer provisioned`,
        'relay-failed': `quarantined message ${id} could not be queued for relay; it stays held`,
      }[res.reason];
      throw new Error(why);
    }
    io.stdout(`released quarantined message ${id} to ${(JSON.parse(res.row.rcpt_to) as string[]).join(', ')}\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    if (!await store.find(null, id)) throw new Error(`no quarantined message ${id}`);
    if (!await store.delete(null, id, now())) throw new Error(`quarantined message ${id} is being released`);
    io.stdout(`deleted quarantined message ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice quarantine list|release|delete');
}
