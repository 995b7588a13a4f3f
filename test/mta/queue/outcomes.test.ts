// Checks the worker's one outcome builder: every way an attempt ends gives each delivery exactly one outcome.
import t from 'tap';
import { outcomesOf } from '../../../mta/queue/attempt-outcomes.js';
import type { DeliveryRow, MessageRow } from '../../../storage/ports/queue.js';

const message = { id: 1, kind: 'outbound', mail_from: 'app@sender.test' } as MessageRow;
const deliveries = [{ id: 10, rcpt: 'a@rcpt.test' }, { id: 11, rcpt: 'b@rcpt.test' }] as DeliveryRow[];
const pick = (o: ReturnType<typeof outcomesOf>) => o.map(({ delivery, message: _m, ...rest }) => ({ id: delivery.id, ...rest }));

t.test('route failures: null MX 556 5.1.10 and NXDOMAIN 550 5.1.2 bounce; no hosts and DNS failures defer 4.4.3', async (t) => {
  const none = { command: null, host: null, suppress: false };
  t.strictSame(pick(outcomesOf(message, deliveries, { kind: 'no-route', route: { kind: 'null-mx' } })), [
    { id: 10, ...none, outcome: 'bounced', code: 556, status: '5.1.10', response: 'recipient domain publishes a null MX (RFC 7505)' },
    { id: 11, ...none, outcome: 'bounced', code: 556, status: '5.1.10', response: 'recipient domain publishes a null MX (RFC 7505)' },
  ]);
  t.strictSame(pick(outcomesOf(message, deliveries.slice(0, 1), { kind: 'no-route', route: { kind: 'no-domain' } })), [
    { id: 10, ...none, outcome: 'bounced', code: 550, status: '5.1.2', response: 'recipient domain does not exist (NXDOMAIN)' },
  ]);
  t.strictSame(pick(outcomesOf(message, deliveries.slice(0, 1), { kind: 'no-route', route: { kind: 'no-hosts', reason: 'x' } })), [
    { id: 10, ...none, outcome: 'deferred', code: null, status: '4.4.3', response: 'no address for any MX host of the recipient domain' },
  ]);
  t.strictSame(pick(outcomesOf(message, deliveries.slice(0, 1), { kind: 'no-route', route: { kind: 'temp', reason: 'SERVFAIL' } })), [
    { id: 10, ...none, outcome: 'deferred', code: null, status: '4.4.3', response: 'DNS lookup failed: SERVFAIL' },
  ]);
});

t.test('dialled: each recipient gets its own result; one the client did not report on is deferred 4.3.0', async (t) => {
  const out = outcomesOf(message, deliveries, {
    kind: 'dialled',
    result: {
      host: 'mx.rcpt.test[127.0.0.1]:25',
      results: [{ rcpt: 'a@rcpt.test', outcome: 'bounced', code: 550, status: '5.1.1', response: '550 5.1.1 no such user', command: 'RCPT TO', category: 'recipient', suppress: true }],
    },
  });
  t.strictSame(pick(out), [
    { id: 10, command: 'RCPT TO', host: 'mx.rcpt.test[127.0.0.1]:25', suppress: true, outcome: 'bounced', code: 550, status: '5.1.1', response: '550 5.1.1 no such user' },
    { id: 11, command: null, host: null, suppress: false, outcome: 'deferred', code: null, status: '4.3.0', response: 'no result for recipient' },
  ]);
  t.equal(out[0]!.message, message);
});

t.test('a local error defers every delivery 4.3.0, never bounces', async (t) => {
  t.strictSame(pick(outcomesOf(message, deliveries, { kind: 'local-error' })).map((o) => [o.id, o.outcome, o.code, o.status, o.response]), [
    [10, 'deferred', null, '4.3.0', 'local error during delivery'],
    [11, 'deferred', null, '4.3.0', 'local error during delivery'],
  ]);
});
