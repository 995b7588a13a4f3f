// End-to-end mail that comes back (issue 35): a send leaves with a VERP return path, a DSN another MTA sends to it
// later becomes a signed hard-bounced webhook, a hard_bounce suppression and an updated log row; a forged or replayed
// one changes nothing; an ARF report to the feedback address becomes a complaint (and fires the complaint-rate
// monitor); an auto-reply changes nothing; a domain that publishes the outbound.return_path_prefix CNAME gets a
// return path of its own, and check-domain says so.
import nodemailer from 'nodemailer';
import t, { type Test } from 'tap';
import { buildDsn, headerBlock } from '../../mta/delivery/dsn.js';
import { onBackends } from '../helpers/backends.js';
import type { PortStack } from '../helpers/stack.js';
import { world, type World } from '../helpers/tracking-world.js';
import { verifyWebhook } from '../helpers/webhook-receiver.js';

const RP = 'bounces.sluice.test';
const FBL = `fbl@${RP}`;
const env = { SLUICE_OUTBOUND_RETURN_PATH_DOMAIN: RP, SLUICE_OUTBOUND_FEEDBACK_ADDRESS: FBL };
const VERP = /^b\+[0-9a-z]+\.[a-z2-7]{16}@bounces\.sluice\.test$/;

function mail(to: string, extra: Record<string, unknown> = {}) {
  return { personalizations: [{ to: [{ email: to }] }], from: { email: 'app@sender.test' }, subject: 'Receipt', content: [{ type: 'text/plain', value: 'Thanks.' }], ...extra };
}

/** Sends `raw` to Sluice's MX as a remote MTA would (null sender unless told), resolving with the reply or error text. */
async function toMx(w: World<PortStack>, to: string, raw: string | Buffer, from = ''): Promise<string> {
  const transport = nodemailer.createTransport({ host: w.stack.mx.host, port: w.stack.mx.port, secure: false, ignoreTLS: true, name: 'mx.rcpt.test' });
  try {
    return (await transport.sendMail({ envelope: { from, to: [to] }, raw })).response;
  } catch (err) {
    return (err as { response?: string; message: string }).response ?? (err as Error).message;
  } finally {
    transport.close();
  }
}

/** Sends one message to `to` and delivers it; resolves with the return path the sink saw and the delivered bytes. */
async function sendOne(t: Test, w: World<PortStack>, to: string, extra: Record<string, unknown> = {}) {
  const sent = await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: mail(to, extra) });
  t.equal(sent.status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  const got = w.sink.messages.at(-1)!;
  return { mailFrom: got.mailFrom, raw: got.raw, requestId: sent.body.request_id as string, messageId: sent.body.results[0].message_id as string };
}

function dsnFor(to: string, rcpt: string, original: Buffer, status = '5.1.1', action?: string): Buffer {
  const raw = buildDsn({
    hostname: 'mx.rcpt.test', to, originalMessageId: 'x@sender.test', arrivalDate: new Date(), now: new Date(),
    recipients: [{ rcpt, status, diagnostic: `550 ${status} <${rcpt}>: Recipient address rejected: User unknown in virtual mailbox table`, remoteMta: 'mx.rcpt.test' }],
    originalHeaders: headerBlock(original),
  }).raw;
  return action ? Buffer.from(raw.toString('utf8').replace('Action: failed', `Action: ${action}`)) : raw;
}

onBackends('a DSN to the return path: signed hard-bounced webhook, hard_bounce suppression, log row; forged and replayed ones change nothing', async (t, backend) => {
  const w = await world(t, env, backend);
  const first = await sendOne(t, w, 'bob@rcpt.test');
  t.match(first.mailFrom, VERP, 'the envelope sender is a signed return path on outbound.return_path_domain');
  t.equal(w.sink.messages.at(-1)!.rcptTo.length, 1);

  // A forged token (one character of the MAC changed) and a token naming another delivery: refused at RCPT.
  const mac = first.mailFrom.slice(first.mailFrom.indexOf('.') + 1, first.mailFrom.indexOf('@'));
  const forged = first.mailFrom.replace(mac, (mac[0] === 'a' ? 'b' : 'a') + mac.slice(1));
  t.match(await toMx(w, forged, dsnFor(forged, 'bob@rcpt.test', first.raw)), /^550 5\.1\.1 /, 'a forged return path is refused');
  const otherId = first.mailFrom.replace(/^b\+[0-9a-z]+\./, 'b+zz.');
  t.match(await toMx(w, otherId, dsnFor(otherId, 'bob@rcpt.test', first.raw)), /^550 5\.1\.1 /, 'another delivery id with this MAC is refused');
  t.equal((await w.events('hard-bounced')).length, 0, 'nothing changed');

  // The receiver accepted it, then bounced it: its DSN arrives from its own MTA to the return path.
  const dsn = dsnFor(first.mailFrom, 'bob@rcpt.test', first.raw);
  t.match(await toMx(w, first.mailFrom, dsn), /^250 /);
  const bounced = await w.events('hard-bounced');
  t.equal(bounced.length, 1);
  t.match(bounced[0], { event: 'hard-bounced', customer_handle: 'acme', request_id: first.requestId, smtp_id: `<${first.messageId}>`, recipients: ['bob@rcpt.test'], status: '5.1.1' });
  t.match(bounced[0].reason, /User unknown/);
  const list = await w.stack.api('GET', '/tx/v1/suppression-list?source=hard_bounce', { key: w.key });
  t.same(list.body.suppression_list.map((s: { recipient: string }) => s.recipient), ['bob@rcpt.test'], 'suppressed with source hard_bounce');
  const today = new Date(w.stack.clock.now()).toISOString().slice(0, 10);
  const tomorrow = new Date(w.stack.clock.now() + 86_400_000).toISOString().slice(0, 10);
  const search = await w.stack.api('POST', '/outbound/v1/search', { key: w.key, body: { start_date: today, end_date: tomorrow, rcpt: 'bob@rcpt.test' } });
  t.equal(search.status, 200);
  t.match(search.body.results[0], { delivered: 'N', lastcmd: 'DSN', rspcode: '550', rspmsg: /User unknown/ }, 'the log row says it bounced after all');

  // The same DSN again (a replay, or the receiver's retry): 250, and nothing more.
  t.match(await toMx(w, first.mailFrom, dsn), /^250 /);
  t.equal((await w.events('hard-bounced')).length, 1, 'a replayed DSN adds no event');

  // The webhook carries the bounce, signed.
  await w.stack.webhookDispatcher.runOnce();
  const post = w.receiver.posts.find((p) => p.events.some((e) => e.event === 'hard-bounced'))!;
  t.ok(post, 'the hard-bounced event was posted');
  const publicKey = (id: string) => w.stack.api('GET', `/tx/v1/webhook/public-key?id=${encodeURIComponent(id)}`).then((r) => r.body?.key as string | undefined);
  t.match(await verifyWebhook(post.headers, post.raw, publicKey, Math.floor(w.stack.clock.now() / 1000)), { ok: true }, 'its signature verifies');

  // The next send to the address is dropped by the suppression.
  const again = await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: mail('bob@rcpt.test') });
  t.equal(again.status, 202);
  t.equal(await w.stack.worker.runOnce(), 0, 'nothing to deliver: suppressed');

  // An SMTP submission left with a return path too: its late bounce reaches the submitter as an RFC 3464 DSN.
  const pw = await w.stack.accounts.createSmtpPassword(w.accountId, w.stack.clock.now());
  if (!pw.ok) throw new Error('password');
  const submit = nodemailer.createTransport({ host: w.stack.submission.host, port: w.stack.submission.port, requireTLS: true, tls: { rejectUnauthorized: false }, auth: { user: 'acme', pass: pw.value.password } });
  t.teardown(() => submit.close());
  await submit.sendMail({ envelope: { from: 'app@sender.test', to: ['dave@rcpt.test'] }, raw: 'From: app@sender.test\r\nTo: dave@rcpt.test\r\nSubject: Submitted\r\n\r\nHi.\r\n' });
  t.equal(await w.stack.worker.runOnce(), 1);
  const submitted = w.sink.messages.at(-1)!;
  t.match(submitted.mailFrom, VERP);
  t.match(await toMx(w, submitted.mailFrom, dsnFor(submitted.mailFrom, 'dave@rcpt.test', submitted.raw)), /^250 /);
  const forwarded = await w.stack.sql<{ mail_from: string; rcpt: string }>("SELECT m.mail_from, d.rcpt FROM messages m JOIN deliveries d ON d.message_id = m.id WHERE m.kind = 'dsn'");
  t.same(forwarded.map((r) => [r.mail_from, r.rcpt]), [['', 'app@sender.test']], 'one DSN, from <>, to the submitter');
  t.match(await toMx(w, submitted.mailFrom, dsnFor(submitted.mailFrom, 'dave@rcpt.test', submitted.raw)), /^250 /);
  t.equal((await w.stack.sql("SELECT 1 FROM messages WHERE kind = 'dsn'")).length, 1, 'a replay forwards nothing more');
});

onBackends('an ARF complaint to the feedback address: complained event, spam_complaint suppression, complaint-rate alert; delay notices, text bounces, auto-replies', async (t, backend) => {
  // One delivered recipient is enough to judge the rate here (the default waits for 1000).
  const w = await world(t, { ...env, SLUICE_ABUSE_COMPLAINT_MIN: '1' }, backend);
  const watch = await w.stack.api('POST', '/tx/v1/monitors', { key: w.key, body: { condition: 'sender_id_receiving_complaints', interval_hours: 1, delivery: 'webhook', webhook_url: w.receiver.url } });
  t.equal(watch.status, 201);
  t.match(watch.body, { condition: 'sender_id_receiving_complaints', condition_description: 'Sender ID is receiving spam complaints' });
  const alerts = async () => (await w.stack.api('GET', `/tx/v1/monitors/${watch.body.id}/alerts`, { key: w.key })).body;
  const sent = await sendOne(t, w, 'carol@rcpt.test');
  // A feedback loop's report (RFC 5965): the complaint, then the original as the mailbox provider stored it.
  const boundary = 'arf-1';
  const arf = [
    'From: <staff@fbl.rcpt.test>', `To: <${FBL}>`, 'Subject: complaint about message from 127.0.0.1', 'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`, '',
    `--${boundary}`, 'Content-Type: text/plain', '', 'This is an email abuse report.', '',
    `--${boundary}`, 'Content-Type: message/feedback-report', '', 'Feedback-Type: abuse', 'User-Agent: RcptFBL/1.0', 'Version: 1',
    'Original-Rcpt-To: <carol@rcpt.test>', 'Source-IP: 127.0.0.1', '',
    `--${boundary}`, 'Content-Type: message/rfc822', '', `Return-Path: <${sent.mailFrom}>`, sent.raw.toString('utf8'),
    `--${boundary}--`, '',
  ].join('\r\n');
  t.match(await toMx(w, FBL, arf, 'staff@fbl.rcpt.test'), /^250 /);
  const complained = await w.events('complained');
  t.equal(complained.length, 1);
  t.match(complained[0], { event: 'complained', customer_handle: 'acme', request_id: sent.requestId, recipients: ['carol@rcpt.test'] });
  const list = await w.stack.api('GET', '/tx/v1/suppression-list?source=spam_complaint', { key: w.key });
  t.same(list.body.suppression_list.map((s: { recipient: string }) => s.recipient), ['carol@rcpt.test']);
  t.match(await toMx(w, FBL, arf, 'staff@fbl.rcpt.test'), /^250 /);
  t.equal((await w.events('complained')).length, 1, 'the same complaint again adds nothing');
  // 1 complaint of 1 delivered is over 0.3 %: one alert, stored before the 250, naming the message; the repeat fired none.
  const fired = await alerts();
  t.equal(fired.length, 1);
  t.match(fired[0], { sender_id: /^acme\|/, payload: { condition_name: 'sender_id_receiving_complaints', account_id: 'acme', message_id: sent.messageId, transaction_id: sent.requestId } });
  t.match((await w.stack.api('GET', '/tx/v1/metrics/performance', { key: w.key })).body, { processed: 1, delivered: 1, complained: 1 }, 'counted in the metrics');
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const logged = await w.stack.api('POST', '/outbound/v1/search', { key: w.key, body: { start_date: day(w.stack.clock.now()), end_date: day(w.stack.clock.now() + 86_400_000), rcpt: 'carol@rcpt.test' } });
  t.match(logged.body.results[0], { delivered: 'Y', lastcmd: 'ARF', rspcode: '250', rspmsg: /^spam complaint: RFC 5965 abuse report/ }, 'the log row shows the complaint, still delivered');

  // A delay notice: one soft-bounced event, the delivery stays delivered.
  const dave = await sendOne(t, w, 'dave@rcpt.test');
  const delay = dsnFor(dave.mailFrom, 'dave@rcpt.test', dave.raw, '4.2.2', 'delayed');
  t.match(await toMx(w, dave.mailFrom, delay), /^250 /);
  t.match(await toMx(w, dave.mailFrom, delay), /^250 /);
  const soft = await w.events('soft-bounced');
  t.equal(soft.length, 1, 'a delay notice is recorded once');
  t.match(soft[0], { recipients: ['dave@rcpt.test'], status: '4.2.2' });
  t.equal((await w.events('hard-bounced')).length, 0);

  // An out-of-office reply to the return path: taken, and nothing changes.
  const reply = `From: Dave <dave@rcpt.test>\r\nTo: ${dave.mailFrom}\r\nSubject: Automatic reply: Receipt\r\nAuto-Submitted: auto-replied\r\n\r\nI am away; your message could not be delivered to me in person.\r\n`;
  t.match(await toMx(w, dave.mailFrom, reply), /^250 /);
  t.equal((await w.events('hard-bounced')).length, 0, 'an auto-reply is no bounce');

  // qmail's bounce: no DSN, the words and its (#5.1.1) say it.
  const erin = await sendOne(t, w, 'erin@rcpt.test');
  const qmail = `From: MAILER-DAEMON@rcpt.test\r\nTo: ${erin.mailFrom}\r\nSubject: failure notice\r\n\r\nHi. This is the qmail-send program at rcpt.test.\r\nI'm afraid I wasn't able to deliver your message to the following addresses.\r\nThis is a permanent error; I've given up. Sorry it didn't work out.\r\n\r\n<erin@rcpt.test>:\r\nSorry, no mailbox here by that name. (#5.1.1)\r\n`;
  t.match(await toMx(w, erin.mailFrom, qmail), /^250 /);
  const hard = await w.events('hard-bounced');
  t.equal(hard.length, 1);
  t.match(hard[0], { recipients: ['erin@rcpt.test'], status: '5.1.1' });

  // Two recipients at one domain: a transaction each, each with its own return path (VERP).
  const before = w.sink.messages.length;
  const pair = await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: { ...mail('gus@rcpt.test'), personalizations: [{ to: [{ email: 'gus@rcpt.test' }, { email: 'hal@rcpt.test' }] }] } });
  t.equal(pair.status, 202);
  t.equal(await w.stack.worker.runOnce(), 2);
  const got = w.sink.messages.slice(before);
  t.same(got.map((m) => m.rcptTo).sort(), [['gus@rcpt.test'], ['hal@rcpt.test']]);
  t.ok(got.every((m) => VERP.test(m.mailFrom)) && got[0]!.mailFrom !== got[1]!.mailFrom, 'two return paths');

  // A request that names envelope_from keeps it: no return path, its bounces go where it said.
  const kept = await sendOne(t, w, 'frank@rcpt.test', { envelope_from: { email: 'bounces@sender.test' } });
  t.equal(kept.mailFrom, 'bounces@sender.test');
});

// On SQLite only: nothing here is storage's (the first test covers the bounce on each backend).
t.test('sqlite: return_path_prefix: with psrp.<domain> CNAME the return path, check-domain passes and its DSN counts', async (t) => {
  const w = await world(t, { ...env, SLUICE_OUTBOUND_RETURN_PATH_PREFIX: 'psrp' });
  const check = async (domain: string) => (await w.stack.api('POST', '/tx/v1/check-domain', { key: w.key, body: { domain } })).body.check_results.return_path;
  t.same(await check('sender.test'), {
    domain: RP, verdict: 'failed',
    reason: `psrp.sender.test has no CNAME record; publish a CNAME record psrp.sender.test pointing at ${RP}, and mail will leave with psrp.sender.test`,
  });
  t.match((await sendOne(t, w, 'ann@rcpt.test')).mailFrom, VERP, 'no CNAME: the operator domain');

  // The customer publishes the CNAME (Postal's psrp); check-domain looks it up, and the next send uses it.
  w.dns.zones['psrp.sender.test'] = { CNAME: RP };
  t.same(await check('sender.test'), { domain: 'psrp.sender.test', verdict: 'passed' });
  const bob = await sendOne(t, w, 'bob@rcpt.test');
  t.match(bob.mailFrom, /^b\+[0-9a-z]+\.[a-z2-7]{16}@psrp\.sender\.test$/, 'MAIL FROM on psrp.sender.test: SPF aligns with sender.test');

  // The receiver's MX follows the CNAME to ours: a forged token there is refused, the real DSN becomes a bounce.
  const forged = bob.mailFrom.replace(/\.([a-z2-7])/, (_, c: string) => `.${c === 'a' ? 'b' : 'a'}`);
  t.match(await toMx(w, forged, dsnFor(forged, 'bob@rcpt.test', bob.raw)), /^550 5\.1\.1 /);
  t.match(await toMx(w, bob.mailFrom, dsnFor(bob.mailFrom, 'bob@rcpt.test', bob.raw)), /^250 /);
  const bounced = await w.events('hard-bounced');
  t.equal(bounced.length, 1);
  t.match(bounced[0], { request_id: bob.requestId, recipients: ['bob@rcpt.test'], status: '5.1.1' });
  t.match(await toMx(w, 'b+1.abcdefghijklmnop@psrp.sender.test', 'Subject: x\r\n\r\nx\r\n'), /^550 5\.1\.1 /, 'no such delivery');
});
