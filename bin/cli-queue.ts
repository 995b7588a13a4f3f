// Owns `sluice queue`: list, show, retry and delete outbound deliveries in the durable queue.
import { createQueueAdmin } from '../mta/queue/queue-admin.js';
import type { QueueStore } from '../storage/queue.js';
import { iso, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

export function queueCommand(sub: string | undefined, rest: string[], store: QueueStore, opts: Opts, io: CliIo, now: () => number): number {
  const idArg = () => requireId(rest[0] ?? opts.id);
  // The same queue service as the web console, with the operator's scope (every message).
  const admin = createQueueAdmin({ store, now });
  if (sub === 'list') {
    const limit = opts.limit === undefined ? 100 : Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
    const rows = store.listPending(limit, 0).map((d) => ({
      id: d.id,
      state: d.state,
      rcpt: d.rcpt,
      sender: d.mail_from,
      message_id: d.header_message_id,
      attempts: d.attempts,
      next_attempt_at: iso(d.next_attempt_at),
      last_response: d.last_response,
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : rows
            .map((r) => `${r.id}\t${r.state}\t${r.next_attempt_at}\t${r.attempts}\t<${r.sender}> -> <${r.rcpt}>\t${r.last_response ?? ''}\n`)
            .join('') || 'queue is empty\n',
    );
    return 0;
  }
  if (sub === 'show') {
    const found = admin.show(null, idArg());
    if (!found) throw new Error(`no delivery ${rest[0] ?? opts.id}`);
    const { delivery, message, attempts } = found;
    const out = {
      delivery: { ...delivery, next_attempt_at: iso(delivery.next_attempt_at), updated_at: iso(delivery.updated_at) },
      message: message && {
        ...message,
        created_at: iso(message.created_at),
        expires_at: iso(message.expires_at),
        verdicts: message.verdicts === null ? null : JSON.parse(message.verdicts),
      },
      attempts: attempts.map((a) => ({ ...a, at: iso(a.at) })),
    };
    io.stdout(JSON.stringify(out, null, opts.json ? 0 : 2) + '\n');
    return 0;
  }
  if (sub === 'retry') {
    const n = opts.all ? store.retryNow(null, now()) : admin.retry(null, idArg()) === 'ok' ? 1 : 0;
    if (!opts.all && n === 0) throw new Error(`delivery ${rest[0] ?? opts.id} is not queued`);
    io.stdout(`${n} deliver${n === 1 ? 'y' : 'ies'} due now\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    if (admin.remove(null, id, 'operator') !== 'ok') throw new Error(`delivery ${id} is not queued or held`);
    io.stdout(`dropped delivery ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice queue list|show|retry|delete');
}
