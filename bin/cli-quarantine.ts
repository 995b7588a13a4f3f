// Owns `sluice quarantine`: list, release (through the durable queue) and delete quarantined inbound messages;
// releasing and deleting as spam train the message's account's classifier model.
import { domainToASCII } from 'node:url';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import { deleteQuarantined, releaseQuarantined } from '../mta/inbound/quarantine-release.js';
import type { BayesClassifier } from '../filters/bayes.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import type { ArcSealer } from '../mta/inbound/arc-seal.js';
import { createQueue } from '../mta/queue/queue.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import { QUARANTINE_LEASE_MS, quarantineStatus, type QuarantineStore } from '../storage/ports/quarantine.js';
import type { Store } from '../storage/ports/store.js';
import { headed, iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

/**
 * The inbound relay over this store: a release is committed to the durable queue, and a running server's worker
 * sees the commit (the Queue port's `changes`) and delivers it to the domain's downstreams.
 */
export function queueRelay(store: Store, hostname: string, now: () => number, arc?: ArcSealer): InboundRelay {
  const queue = createQueue({
    store: store.queue,
    bodies: store.bodies,
    handleOf: async () => '',
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
  });
  return createInboundRelay({ queue, hostname, arc });
}

/** What the classifier did with the decision, for the command's one line. */
function learnedNote(learned: string | undefined, cls: 'spam' | 'ham'): string {
  if (learned === undefined) return '';
  if (learned === 'failed') return `; the classifier could not learn it (see the log)`;
  return learned === 'already' ? `; the classifier knew it as ${cls} already` : `; the classifier learned it as ${cls}`;
}

export async function quarantineCommand(
  sub: string | undefined,
  rest: string[],
  accounts: AccountStore,
  store: QuarantineStore,
  relay: InboundRelay,
  bayes: BayesClassifier,
  opts: Opts & { 'as-spam'?: boolean },
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
      rcpt_to: r.rcpt_to,
      subject: r.subject,
      score: r.score,
      created_at: iso(r.created_at),
      expires_at: iso(r.expires_at),
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : headed(
            ['ID', 'STATUS', 'CREATED', 'SCORE', 'SENDER -> RECIPIENTS', 'SUBJECT'],
            rows.map((r) => `${r.id}\t${r.status}\t${r.created_at}\t${r.score}\t<${r.sender}> -> ${r.rcpt_to.map((x) => `<${x}>`).join(',')}\t${r.subject ?? ''}\n`).join(''),
          ) || 'quarantine is empty\n',
    );
    return 0;
  }
  if (sub === 'release') {
    const id = idArg();
    const res = await releaseQuarantined({ store, relay, now, bayes }, null, id);
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
    io.stdout(`released quarantined message ${id} to ${res.row.rcpt_to.join(', ')}${learnedNote(res.learned, 'ham')}\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    const res = await deleteQuarantined({ store, relay, now, bayes }, null, id, { asSpam: opts['as-spam'] === true });
    if (!res.ok) throw new Error(res.reason === 'not-found' ? `no quarantined message ${id}` : `quarantined message ${id} is being released`);
    io.stdout(`deleted quarantined message ${id}${learnedNote(res.learned, 'spam')}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice quarantine list|release|delete');
}
