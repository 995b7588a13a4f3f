// Owns `sluice queue`: list, show, retry and delete outbound deliveries in the durable queue (postqueue's jobs).
import { createQueueAdmin } from '../mta/queue/queue-admin.js';
import type { AttemptRow, DeliveryRow, MessageRow } from '../storage/ports/queue.js';
import type { QueueViewStore } from '../storage/ports/queue-views.js';
import type { Store } from '../storage/ports/store.js';
import { iso, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

/** Bytes as a short column value: 812, 1.2K, 3.4M (1024-based, as postqueue's sizes are read). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return String(bytes);
  const units = ['K', 'M', 'G'];
  let n = bytes / 1024;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n < 10 ? n.toFixed(1) : Math.round(n)}${units[i]}`;
}

/** A duration as its largest unit: 45s, 12m, 3h, 2d (negative durations count as 0). */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** Rows of cells as columns padded to their widest cell (the last column is not padded). */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}

/** When a waiting delivery is tried next, relative to now. */
function nextText(d: DeliveryRow, now: number): string {
  if (d.state === 'held') return 'held';
  if (d.state === 'sending') return 'sending';
  return d.next_attempt_at <= now ? 'due' : `in ${formatAge(d.next_attempt_at - now)}`;
}

async function list(store: QueueViewStore, opts: Opts, io: CliIo, now: number): Promise<void> {
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
  const rows = await store.listPending(limit, 0);
  if (opts.json) {
    const out = rows.map((d) => ({
      id: d.id,
      queue_id: d.queue_id,
      state: d.state,
      rcpt: d.rcpt,
      sender: d.mail_from,
      message_id: d.header_message_id,
      size: d.message_size,
      queued_at: iso(d.message_created_at),
      attempts: d.attempts,
      next_attempt_at: iso(d.next_attempt_at),
      last_response: d.last_response,
    }));
    io.stdout(JSON.stringify(out) + '\n');
    return;
  }
  if (rows.length === 0) {
    io.stdout('queue is empty\n');
    return;
  }
  // postqueue -p: one entry per delivery, the reason it waits under it, a summary line at the end.
  const cells = [['ID', 'STATE', 'SIZE', 'AGE', 'TRIES', 'NEXT', 'SENDER -> RECIPIENT']];
  const notes: string[] = [];
  for (const d of rows) {
    cells.push([
      String(d.id),
      d.state,
      formatSize(d.message_size),
      formatAge(now - d.message_created_at),
      String(d.attempts),
      nextText(d, now),
      `<${d.mail_from}> -> <${d.rcpt}>`,
    ]);
    notes.push(`    queue id ${d.queue_id}${d.last_response ? `; last reply: ${d.last_response}` : ''}`);
  }
  const [header, ...lines] = table(cells);
  const body = lines.flatMap((l, i) => [l, notes[i] as string]);
  const sum = await store.pendingSummary();
  const more = sum.deliveries > rows.length ? ` (the first ${rows.length} shown; --limit N for more)` : '';
  const summary =
    `-- ${sum.deliveries} ${sum.deliveries === 1 ? 'delivery' : 'deliveries'} in ${sum.messages} ` +
    `${sum.messages === 1 ? 'message' : 'messages'}, ${formatSize(sum.bytes)} bytes: ${sum.queued} queued ` +
    `(${sum.deferred} deferred), ${sum.sending} sending, ${sum.held} held${more}`;
  io.stdout([header, ...body, summary].join('\n') + '\n');
}

/** The readable view of one delivery: the envelope and message, then one line per attempt. */
function showText(d: DeliveryRow, m: MessageRow | undefined, attempts: AttemptRow[], now: number): string {
  const field = (name: string, value: string) => `  ${name.padEnd(12)} ${value}\n`;
  let out = `delivery ${d.id}: ${d.state}, ${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}`;
  out += d.state === 'queued' ? `, next ${iso(d.next_attempt_at)} (${nextText(d, now)})\n` : '\n';
  if (m) {
    out += field('queue id', m.request_id);
    out += field('kind', m.kind + (m.sender_id ? ` (sender id ${m.sender_id})` : ''));
    out += field('from', `<${m.mail_from}>`);
    out += field('to', `<${d.rcpt}>`);
    out += field('message-id', m.message_id);
    if (m.subject !== null) out += field('subject', m.subject);
    out += field('size', `${m.size} bytes`);
    out += field('arrived', `${iso(m.created_at)} (${formatAge(now - m.created_at)} ago)`);
    out += field('expires', iso(m.expires_at) as string);
  }
  if (d.last_response) out += field('last reply', `${d.last_response}${d.last_host ? ` (from ${d.last_host})` : ''}`);
  out += attempts.length === 0 ? 'no attempts yet\n' : 'attempts:\n';
  for (const a of attempts) {
    const code = [a.code, a.status].filter((x) => x !== null).join(' ');
    out += `  ${iso(a.at)}  ${a.outcome.padEnd(9)} ${code.padEnd(9)} ${a.host ?? '-'}  ${a.command ?? '-'}: ${a.response}\n`;
  }
  return out;
}

/** A message record as `queue show --json` prints it: its body stays inside storage. */
function withoutBody(m: MessageRow): Omit<MessageRow, 'body'> {
  const { body: _body, ...rest } = m;
  return rest;
}

export async function queueCommand(
  sub: string | undefined,
  rest: string[],
  store: Pick<Store, 'queue' | 'queueViews'>,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const idArg = () => requireId(rest[0] ?? opts.id);
  // The same queue service as the web console, with the operator's scope (every message).
  const admin = createQueueAdmin({ store: store.queue, views: store.queueViews, now });
  if (sub === 'list') {
    await list(store.queueViews, opts, io, now());
    return 0;
  }
  if (sub === 'show') {
    const found = await admin.show(null, idArg());
    if (!found) throw new Error(`no delivery ${rest[0] ?? opts.id}`);
    const { delivery, message, attempts } = found;
    if (!opts.json) {
      io.stdout(showText(delivery, message, attempts, now()));
      return 0;
    }
    const out = {
      delivery: { ...delivery, next_attempt_at: iso(delivery.next_attempt_at), updated_at: iso(delivery.updated_at) },
      message: message && {
        ...withoutBody(message),
        created_at: iso(message.created_at),
        expires_at: iso(message.expires_at),
        verdicts: message.verdicts,
      },
      attempts: attempts.map((a) => ({ ...a, at: iso(a.at) })),
    };
    io.stdout(JSON.stringify(out) + '\n');
    return 0;
  }
  if (sub === 'retry') {
    const n = opts.all ? await store.queueViews.retryNow(null, now()) : (await admin.retry(null, idArg())) === 'ok' ? 1 : 0;
    if (!opts.all && n === 0) throw new Error(`delivery ${rest[0] ?? opts.id} is not queued`);
    // A running worker sees this commit within 250 ms (PRAGMA data_version, mta/queue/worker.ts).
    io.stdout(`${n} deliver${n === 1 ? 'y' : 'ies'} due now; a running server attempts ${n === 1 ? 'it' : 'them'} within a second\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    if ((await admin.remove(null, id, 'operator')) !== 'ok') throw new Error(`delivery ${id} is not queued or held`);
    io.stdout(`dropped delivery ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice queue list|show|retry|delete');
}
