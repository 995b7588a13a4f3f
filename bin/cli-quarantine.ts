// Owns `sluice quarantine`: list, release (through the durable queue) and delete quarantined inbound messages.
import { domainToASCII } from 'node:url';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import { releaseQuarantined } from '../mta/inbound/quarantine-release.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createQueue } from '../mta/queue/queue.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import type { AccountStore } from '../storage/sqlite/accounts.js';
import type { Db } from '../storage/sqlite/database.js';
import { quarantineStatus, type QuarantineStore } from '../storage/sqlite/quarantine.js';
import { createQueueStore } from '../storage/sqlite/queue.js';
import { createSmtpLogStore } from '../storage/sqlite/smtp-log.js';
import { createSuppressionStore } from '../storage/sqlite/suppressions.js';
import { iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

/**
 * The inbound relay over this database: a release is committed to the durable queue, and the running server's
 * worker delivers it to the domain's downstreams on its next pass (at most 30 s later).
 */
export function queueRelay(db: Db, hostname: string, now: () => number): InboundRelay {
  const queue = createQueue({
    store: createQueueStore(db),
    smtpLog: createSmtpLogStore(db),
    suppressions: createSuppressionStore(db),
    handleOf: () => '',
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
    const account = opts.account === undefined ? null : requireAccount(accounts, opts.account).id;
    const domain = opts.domain === undefined ? undefined : domainToASCII(opts.domain.trim().toLowerCase().replace(/\.$/, ''));
    const page = store.list({ accountId: account, domain, limit, offset: 0 }, now());
    const rows = page.rows.map((r) => ({
      id: r.id,
      status: quarantineStatus(r, now(), store.leaseMs),
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
    if (!store.find(null, id)) throw new Error(`no quarantined message ${id}`);
    if (!store.delete(null, id, now())) throw new Error(`quarantined message ${id} is being released`);
    io.stdout(`deleted quarantined message ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice quarantine list|release|delete');
}
