// Owns the bounds of a REST send (issue 31 finding 1): recipients per request and send requests per second per account.
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';

const to = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ email: `r${from + i}@rcpt.test` }));

onBackends('a send naming more recipients than send.max_recipients (to, cc and bcc of every personalization) is refused whole', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  // Each list is within MailChannels' 1,000 (the schema passes); together they are one over.
  const over = { personalizations: [{ to: to(600), cc: to(300, 600) }, { to: to(50, 900), bcc: to(51, 950) }] };
  for (const path of ['/tx/v1/send-async', '/tx/v1/send', '/tx/v1/send?dry-run=true']) {
    const res = await w.rest(mail('hi', over), path);
    t.equal(res.status, 400, `${path}: 400`);
    t.same(res.body, {
      errors: ['personalizations: 1001 recipients (to, cc and bcc of every personalization together); at most 1000 per request, split the rest into further requests'],
    }, `${path}: the tx error shape names the bound`);
  }
  t.equal(await w.deliveries('queued') + await w.deliveries('dropped'), 0, 'nothing was queued');

  const at = await w.rest(mail('hi', { personalizations: [{ to: to(999), cc: to(1, 999) }] }));
  t.equal(at.status, 202, 'exactly the bound is accepted');
  t.equal(await w.deliveries('queued'), 1000);
});

onBackends('send.max_recipients is the operator\'s to set', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_SEND_MAX_RECIPIENTS: '2' } });
  const res = await w.rest(mail('hi', { personalizations: [{ to: to(2) }, { to: to(1, 2) }] }));
  t.equal(res.status, 400);
  t.match(res.body.errors[0], /^personalizations: 3 recipients .* at most 2 per request/);
  t.equal((await w.rest(mail('hi', { personalizations: [{ to: to(1) }, { to: to(1, 1) }] }))).status, 202);
});

onBackends('send requests past send.rate_per_second get 429 with Retry-After, per account, until a token comes back', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_SEND_RATE_PER_SECOND: '3' } });
  const other = await w.stack.createAccount('other');
  // The three routes share one bucket per account; the injected clock stands still, so no token comes back.
  t.equal((await w.rest(mail('1'))).status, 202);
  t.equal((await w.rest(mail('2'), '/tx/v1/send')).status, 202);
  t.equal((await w.rest(mail('3'), '/tx/v1/send?dry-run=true')).status, 200);
  const refused = await w.rest(mail('4'));
  t.equal(refused.status, 429);
  t.equal(refused.headers.get('retry-after'), '1');
  t.same(refused.body, { errors: ['rate limit exceeded: at most 3 send requests per second per account'] });
  t.equal((await w.rest(mail('5'), '/tx/v1/send?dry-run=true')).status, 429, 'a dry run counts too');
  t.equal(await w.deliveries('queued'), 2, 'nothing of the refused requests was queued');
  // Another account has its own bucket (its From domain is not authorized: a 403 proves the limiter let it in).
  t.equal((await w.rest(mail('6'), '/tx/v1/send-async', other.key)).status, 403, 'another account is not limited');
  w.stack.clock.advance(1000);
  t.equal((await w.rest(mail('7'))).status, 202, 'a second later the account may send again');
});

onBackends('the defaults: SendGrid\'s documented 1,000 recipients, /inbound/v1\'s 100 requests per second per account', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  t.equal(w.stack.config.send.maxRecipients, 1000);
  t.equal(w.stack.config.send.ratePerSecond, 100);
});

onBackends('send.rate_per_second = 0 turns the send limit off (not a bucket that never fills)', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_SEND_RATE_PER_SECOND: '0' } });
  for (let i = 0; i < 3; i++) t.equal((await w.rest(mail(`n${i}`))).status, 202);
});

onBackends('the monthly send limit holds under concurrent sends: reserved in the store, never passed together', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_SEND_RATE_PER_SECOND: '0' } });
  await w.stack.accounts.setSendLimit(w.accountId, 3);
  // A check-then-accept lets requests that read the usage at once all pass; the reservation serialises them.
  const statuses = await Promise.all(Array.from({ length: 8 }, (_, i) => w.rest(mail(`c${i}`)).then((r) => r.status)));
  t.same(statuses.filter((s) => s === 202).length, 3, `exactly the limit accepted (${statuses.join(', ')})`);
  t.same(statuses.filter((s) => s === 403).length, 5, 'the rest refused 403');
  t.equal(await w.deliveries('queued'), 3);
  const after = await w.rest(mail('later'));
  t.equal(after.status, 403);
  t.same(after.body, { errors: ['monthly send limit reached: 3 of 3 messages used this month'] }, 'reservations released: the count is the usage');
});
