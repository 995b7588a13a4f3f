// Owns the accepted outbound message tests queue through the Queue port directly (no tap import: the stall
// measurements run it in a process of their own).
import type { AcceptRecord } from '../../storage/ports/queue.js';
import type { Store } from '../../storage/ports/store.js';

/** One accepted outbound message of `accountId` to `rcpts`, body written through the Bodies port, due at `at`. */
export async function message(store: Store, accountId: number, rcpts: string[], at: number, extra: Partial<AcceptRecord> = {}): Promise<AcceptRecord> {
  const raw = Buffer.from(`From: a@sender.test\r\nTo: ${rcpts.join(', ')}\r\nSubject: contract\r\n\r\nbody ${at}\r\n`);
  return {
    message: {
      accountId, kind: 'outbound', sendRequestId: `req-${at}`, messageId: `${at}@sender.test`, mailFrom: 'a@sender.test',
      fromEmail: 'a@sender.test', subject: 'contract', campaignId: null, transactional: true, body: await store.bodies.write(raw),
      size: raw.length, auth: null, upstream: null, upstreamHostname: null, senderId: null, createdAt: at, expiresAt: at + 5 * 86_400_000,
      verdicts: null, tracking: 0, verp: false,
    },
    deliveries: rcpts.map((rcpt) => ({ rcpt, domain: rcpt.split('@')[1]!, state: 'queued' as const })),
    events: [{ accountId, kind: 'processed', payload: { event: 'processed', email: rcpts[0] }, at }],
    ...extra,
  };
}
