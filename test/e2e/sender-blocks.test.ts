// End-to-end sender blocks: strikes within the window block an identity, its sends are refused (REST and SMTP),
// its log rows offer DELIST, POST /outbound/v1/remediation lifts it (scoped, rate-limited), the operator may too.
import { onBackends } from '../helpers/backends.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { mail, outboundWorld, rawMail } from '../helpers/outbound-world.js';

const HOUR = 3_600_000;
const ID = 'acme|x-authuser|app@sender.test';
const env = { SLUICE_ABUSE_BLOCK_CONFIRMED: '2', SLUICE_ABUSE_BLOCK_SUSPECT: '2', SLUICE_ABUSE_BLOCK_WINDOW_HOURS: '24' };
/** 7.5 points of URL heuristics: SUSPECT, sent. */
const SUSPECT_HTML = '<a href="http://192.0.2.7/x">a</a> <a href="https://bank.test@evil.test/">c</a> <a href="https://evil.test/">https://bank.test/</a> <a href="https://bit.ly/x">b</a>';

onBackends('two CONFIRMED messages block the identity; its sends are refused and its rows offer DELIST', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail('hello'))).status, 202, 'one strike does not block');
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  const blocked = await w.rest(mail('hello again'));
  t.equal(blocked.status, 403);
  t.match(blocked.body.errors[0], /^sender acme\|x-authuser\|app@sender\.test is blocked for sending spam \(2 CONFIRMED spam or virus messages within 24 h\); request delisting with POST \/outbound\/v1\/remediation$/);
  const rows = await w.search({ sender_id: ID });
  t.equal(rows.length, 4, 'every attempt is logged, the blocked one too');
  t.ok(rows.every((r) => r.remediation_options === 'DELIST'), 'every row of a blocked identity offers DELIST');
  t.match(rows[0], { subject: 'Hello', rspcode: '550', spam_disposition: 'UNKNOWN', rspmsg: /^5\.7\.1 sender .* is blocked/ });

  // Another identity of the same account is not blocked; SMTP as acme is its own identity too.
  t.equal((await w.rest({ ...mail('hi'), from: { email: 'news@sender.test' } })).status, 202);
  t.notOk((await w.search({ sender_id: 'acme|x-authuser|news@sender.test' }))[0].remediation_options);
  t.match(await w.smtp(rawMail('hi')), /^250 /);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 3, 'only the unblocked sends went out');
});

onBackends('SUSPECT mail counts too, and strikes leave the window', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  const suspect = () => w.rest({ ...mail('x'), content: [{ type: 'text/html', value: SUSPECT_HTML }] });
  t.equal((await suspect()).status, 202);
  w.stack.clock.advance(25 * HOUR);
  t.equal((await suspect()).status, 202, 'the first strike left the 24 h window');
  t.equal((await suspect()).status, 202, 'SUSPECT mail is sent, and this one blocks');
  t.equal((await w.rest(mail('hello'))).status, 403);
});

onBackends('submission: a blocked identity gets 550 5.7.1', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  t.match(await w.smtp(rawMail(GTUBE)), /^550 5\.7\.1 message refused/);
  t.match(await w.smtp(rawMail(GTUBE)), /^550 5\.7\.1 message refused/);
  t.match(await w.smtp(rawMail('hello')), /^550 5\.7\.1 sender acme\|x-authuser\|acme is blocked for sending spam/);
  t.equal((await w.rest(mail('hello'))).status, 202, 'REST sends from app@sender.test are another identity');
});

onBackends('remediation: errors, delisting by message_id and by sender, the rate limit and the operator', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  const remediate = (query: string, headers: Record<string, string> = {}, key = w.key) =>
    w.stack.api('POST', `/outbound/v1/remediation${query}`, { key, headers });

  t.same((await remediate('')).body, { code: 400, errors: ['message_id or sender is required (query parameters)'], message: 'message_id or sender is required (query parameters)' });
  t.equal((await remediate('')).status, 400);
  t.equal((await remediate('', {}, 'nokey')).status, 401);
  t.equal((await remediate('?sender=app@sender.test')).status, 404, 'nothing blocked yet');

  const blockIt = async () => {
    t.equal((await w.rest(mail(GTUBE))).status, 403);
    t.equal((await w.rest(mail(GTUBE))).status, 403);
    t.equal((await w.rest(mail('probe'))).status, 403, 'blocked');
  };
  await blockIt();
  const [row] = await w.search({ sender_id: ID, spam_disposition: 'CONFIRMED' });
  t.equal((await remediate(`?message_id=nosuch@mx.sluice.test`)).status, 404);
  t.equal((await remediate(`?message_id=${encodeURIComponent(row.message_id)}`, { 'X-Customer-Handle': 'someoneelse' })).status, 403);
  const ok = await remediate(`?message_id=${encodeURIComponent(row.message_id)}&sender=ignored@sender.test`, { 'X-Customer-Handle': 'acme' });
  t.equal(ok.status, 200);
  t.same(ok.body, { status: 'delisted', sender: 'app@sender.test', message_id: row.message_id, sender_id: ID });
  t.equal((await remediate(`?message_id=${encodeURIComponent(row.message_id)}`)).status, 404, 'no longer blocked');
  t.notOk((await w.search({ sender_id: ID }))[0].remediation_options, 'DELIST is gone once lifted');
  t.equal((await w.rest(mail('back again'))).status, 202, 'the next send goes out');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail('still fine'))).status, 202, 'strikes before the delisting no longer count');

  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail('probe'))).status, 403, 'blocked a second time');
  const bySender = await remediate('?sender=APP@sender.test');
  t.same(bySender.body, { status: 'delisted', sender: 'APP@sender.test', message_id: null, sender_id: ID });

  await blockIt();
  const third = await remediate('?sender=app@sender.test');
  t.equal(third.status, 429, 'the third delisting within 24 h is refused');
  t.same(third.body.errors, [`sender ${ID} was already delisted 2 times within 24 hours; ask the operator to lift the block (sluice senders unblock)`]);
  t.equal((await w.rest(mail('probe'))).status, 403, 'still blocked');
  w.stack.clock.advance(24 * HOUR + 1);
  t.equal((await remediate('?sender=app@sender.test')).status, 200, 'a day later the API may delist again');

  await blockIt();
  t.equal(await w.stack.services.abuse.unblock(w.accountId, ID), true, 'the operator lifts a block whatever the count');
  t.equal((await w.rest(mail('probe'))).status, 202);
});

onBackends('tenancy: a parent delists its sub-account with X-Customer-Handle; a sub-account key sees only its own', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { ...env, SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const sub = await w.stack.api('POST', '/tx/v1/sub-account', { key: w.key, body: { handle: 'shop1', company_name: 'Shop' } });
  t.equal(sub.status, 201);
  const subKey = (await w.stack.api('POST', '/tx/v1/sub-account/shop1/api-key', { key: w.key })).body.key as string;
  t.equal((await w.rest(mail(GTUBE), undefined, subKey)).status, 403);
  t.equal((await w.rest(mail(GTUBE), undefined, subKey)).status, 403);
  t.equal((await w.rest(mail('x'), undefined, subKey)).status, 403, 'shop1|x-authuser|app@sender.test is blocked');
  t.equal((await w.rest(mail('x'))).status, 202, "the parent's own identity is not");
  const q = '/outbound/v1/remediation?sender=app@sender.test';
  t.equal((await w.stack.api('POST', q, { key: w.key, headers: { 'X-Customer-Handle': 'acme' } })).status, 404, 'scoped to the parent itself: nothing blocked');
  const other = await w.stack.createAccount('other');
  t.equal((await w.stack.api('POST', q, { key: other.key })).status, 404, "another tenant's block is invisible");
  t.equal((await w.stack.api('POST', q, { key: subKey, headers: { 'X-Customer-Handle': 'acme' } })).status, 403, 'a sub-account key cannot act as its parent');
  const res = await w.stack.api('POST', q, { key: w.key, headers: { 'X-Customer-Handle': 'shop1' } });
  t.equal(res.status, 200);
  t.equal(res.body.sender_id, 'shop1|x-authuser|app@sender.test');
});

onBackends('the monitor policy never blocks', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { ...env, SLUICE_FILTERS_OUTBOUND_POLICY: 'monitor' } });
  for (let i = 0; i < 3; i++) t.equal((await w.rest(mail(GTUBE))).status, 202);
  t.equal((await w.rest(mail('x'))).status, 202);
});
