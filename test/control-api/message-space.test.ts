// Checks that a REST send never takes more than the machine has: below queue.min_free_bytes the send routes answer
// 503 with Retry-After before the body is read; a text that must be held whole (a template to render) past
// smtp.max_buffered_bytes answers 503 with Retry-After, nothing queued, and what it held is given back; a text that
// streams (kept in scratch, composed as a stream) takes nothing from the bound (issue 25 items 3, 4 and 5).
import t, { type Test } from 'tap';
import type { BufferBudget } from '../../mta/buffer-budget.js';
import { startStack, type Stack } from '../helpers/stack.js';

const MEMORY = 'too many messages are in progress; try again later';
const DISK = 'the mail spool is low on disk space; try again later';

async function world(t: Test, env: Record<string, string>) {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off', ...env } });
  return { stack, key: (await stack.createAccount('acme')).key };
}

const mail = (text: string) => ({
  personalizations: [{ to: [{ email: 'bob@dest.example' }] }],
  from: { email: 'app@shop.example' },
  subject: 'Report',
  content: [{ type: 'text/plain', value: text }],
});

/** A mustache template: rendering needs the whole text in memory, so it is read back within the bound. */
const template = (text: string) => ({
  ...mail(text),
  personalizations: [{ to: [{ email: 'bob@dest.example' }], dynamic_template_data: { name: 'Bob' } }],
  content: [{ type: 'text/plain', value: `Hello {{name}}\n${text}`, template_type: 'mustache' }],
});

const queued = (stack: Stack) => (stack.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;

function assertNoRoom(t: Test, res: Awaited<ReturnType<Stack['api']>>, message: string, what: string) {
  t.equal(res.status, 503, what);
  t.equal(res.headers.get('retry-after'), '30', `${what}: Retry-After`);
  t.same(res.body, { errors: [message] }, `${what}: the tx group's shape`);
}

t.test('below queue.min_free_bytes: the send routes answer 503 + Retry-After before the body is read', async (t) => {
  const { stack, key } = await world(t, { SLUICE_QUEUE_MIN_FREE_BYTES: String(Number.MAX_SAFE_INTEGER) });
  assertNoRoom(t, await stack.api('POST', '/tx/v1/send-async', { key, body: mail('hello') }), DISK, 'send-async');
  assertNoRoom(t, await stack.api('POST', '/tx/v1/send', { key, body: mail('hello') }), DISK, 'send');
  // A body that is not JSON would get 400 if it were read: the refusal comes first.
  const raw = await stack.api('POST', '/tx/v1/send-async', { key, raw: '{not json', headers: { 'Content-Type': 'application/json' } });
  assertNoRoom(t, raw, DISK, 'an unread malformed body');
  t.equal(queued(stack), 0, 'nothing was queued');
  // Routes that queue no message are not refused: the disk check guards the spool, not every write.
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key, body: { handle: 'shopsub', company_name: 'Shop' } })).status, 201, 'other writes go on');
});

t.test('with room on the disk the same send is queued', async (t) => {
  const { stack, key } = await world(t, { SLUICE_QUEUE_MIN_FREE_BYTES: '1024' });
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body: mail('hello') })).status, 202);
  t.equal(queued(stack), 1);
});

t.test('past smtp.max_buffered_bytes: 503 + Retry-After, nothing queued, the bound given back for the next send', async (t) => {
  const { stack, key } = await world(t, { SLUICE_SMTP_MAX_BUFFERED_BYTES: '1048576' });
  const budget = stack.services.messageSpace!.budget as BufferBudget;
  t.equal(budget.limit, 1_048_576, 'the key reaches the REST side');
  // A 1.5 MB template: more than the whole bound, and it must be held whole to be rendered.
  const big = template('line of the report\n'.repeat(80_000));
  assertNoRoom(t, await stack.api('POST', '/tx/v1/send-async', { key, body: big }), MEMORY, 'a template past the bound');
  t.equal(queued(stack), 0, 'nothing was queued');
  t.equal(budget.used(), 0, 'what the refused body held is given back');
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body: mail('hello') })).status, 202, 'a send within the bound');
  t.equal(queued(stack), 1);
  t.equal(budget.used(), 0, 'an answered request holds nothing');
  // The same 1.5 MB as plain text streams from scratch into the spool: it never needs the bound.
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body: mail('line of the report\n'.repeat(80_000)) })).status, 202, 'a streamed text past the bound');
  t.equal(queued(stack), 2);
  t.equal(budget.used(), 0, 'a streamed text took nothing from the bound');
});

t.test('a bound shared with messages in progress: what others hold leaves less for a REST body', async (t) => {
  const { stack, key } = await world(t, { SLUICE_SMTP_MAX_BUFFERED_BYTES: '2097152' });
  const budget = stack.services.messageSpace!.budget as BufferBudget;
  const body = template('line of the report\n'.repeat(30_000)); // ≈ 570 KB, held whole to be rendered
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body })).status, 202, 'fits while nothing else is held');
  // As if SMTP sessions held most of the bound with their DATA in progress.
  const release = budget.reserve(budget.limit - 100_000);
  t.ok(release, 'reserved');
  assertNoRoom(t, await stack.api('POST', '/tx/v1/send-async', { key, body }), MEMORY, 'the same body, the bound nearly full');
  release!();
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body })).status, 202, 'room again once they finish');
  t.equal(queued(stack), 2);
});
