// Checks the log an operator reads: delivery lines with relay, reply, queue id and a level by outcome; refused
// recipients and submitted messages logged; AUTH failures at warn.
import nodemailer from 'nodemailer';
import { onBackends } from '../helpers/backends.js';
import { QUEUE_LIFETIME_MS } from '../../mta/queue/retry-schedule.js';
import { captureLogs } from '../helpers/log-capture.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack } from '../helpers/stack.js';

const INFO = 30;
const WARN = 40;
const ERROR = 50;

onBackends('delivery attempts: relay host, reply and queue id on each line; warn for deferrals, error for our own bounces', async (t, backend) => {
  let deferSlow = true;
  const sink = await startSink(t, {
    tls: false,
    onRcpt: (rcpt) => {
      if (rcpt === 'gone@rcpt.test') return { code: 550, message: '5.1.1 no such user here' };
      if (rcpt === 'slow@rcpt.test' && deferSlow) return { code: 451, message: '4.3.2 come back later' };
      if (rcpt === 'never@rcpt.test') return { code: 451, message: '4.3.2 still not now' };
      return undefined;
    },
  });
  const logs = captureLogs();
  const stack = await startStack(t, {
    backend,
    logger: logs.logger,
    env: { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}` },
  });
  const acct = await stack.createAccount('acme');
  const send = async (to: string) => {
    const res = await stack.api('POST', '/tx/v1/send-async', {
      key: acct.key,
      body: { personalizations: [{ to: [{ email: to }] }], from: { email: 'app@sender.test' }, subject: 'hi', content: [{ type: 'text/plain', value: 'x' }] },
    });
    t.equal(res.status, 202);
    return res.body.request_id as string;
  };
  const ids = { ok: await send('ok@rcpt.test'), slow: await send('slow@rcpt.test'), gone: await send('gone@rcpt.test'), never: await send('never@rcpt.test') };
  await stack.worker.runOnce();
  const line = (rcpt: string) => logs.lines.filter((l) => l.msg === 'delivery attempt' && l.rcpt === rcpt).at(-1);
  const relay = new RegExp(`^127\\.0\\.0\\.1\\[127\\.0\\.0\\.1\\]:${sink.port}$`);

  t.match(line('ok@rcpt.test'), { level: INFO, outcome: 'delivered', queueId: ids.ok, relay, code: 250, response: /^250 / });
  t.match(line('slow@rcpt.test'), {
    level: WARN, outcome: 'deferred', queueId: ids.slow, relay, code: 451, status: '4.3.2', response: /come back later/, attempt: 1,
    next_attempt_at: /^\d{4}-\d\d-\d\dT/,
  });
  t.match(line('gone@rcpt.test'), { level: WARN, outcome: 'bounced', queueId: ids.gone, relay, code: 550, status: '5.1.1', response: /no such user here/ });
  t.notOk('next_attempt_at' in line('gone@rcpt.test'), 'nothing comes next for a bounce');

  // The deferred one is delivered next time, at info.
  deferSlow = false;
  stack.clock.advance(QUEUE_LIFETIME_MS / 2);
  await stack.store.queueViews.retryNow(null, stack.clock.now());
  await stack.worker.runOnce();
  t.match(line('slow@rcpt.test'), { level: INFO, outcome: 'delivered', attempt: 2 });
  // A bounce of our own making (the queue lifetime ran out; the remote only ever deferred) is an error.
  stack.clock.advance(QUEUE_LIFETIME_MS);
  await stack.store.queueViews.retryNow(null, stack.clock.now());
  await stack.worker.runOnce();
  t.match(line('never@rcpt.test'), { level: ERROR, outcome: 'bounced', status: '5.4.7', response: /^delivery time expired after 3 attempts; last error: .*still not now/ });
});

onBackends('refused recipients, submitted messages and AUTH failures are logged', async (t, backend) => {
  const logs = captureLogs();
  const stack = await startStack(t, { backend, logger: logs.logger, env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acct = await stack.createAccount('acme');
  const pw = await stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
  if (!pw.ok) throw new Error('no password');

  // MX: a recipient of a domain we do not serve.
  const mx = nodemailer.createTransport({ host: '127.0.0.1', port: stack.mx.port, ignoreTLS: true });
  await t.rejects(mx.sendMail({ envelope: { from: 'a@sender.test', to: ['u@elsewhere.test'] }, raw: 'Subject: x\r\n\r\nx\r\n' }));
  t.match(logs.lines.find((l) => l.msg === 'recipient refused' && l.component === 'mx'), {
    level: INFO, rcpt: 'u@elsewhere.test', mailFrom: 'a@sender.test', ip: '127.0.0.1', reason: 'relay-denied', reply: /^550 5\.7\.1 /,
  });

  const submit = (pass: string) =>
    nodemailer.createTransport({ host: '127.0.0.1', port: stack.submission.port, requireTLS: true, tls: { rejectUnauthorized: false }, auth: { user: 'acme', pass } });
  await t.rejects(submit('wrong').sendMail({ from: 'app@sender.test', to: 'bob@rcpt.test', text: 'x' }));
  t.match(logs.lines.find((l) => l.msg === 'auth failed'), { level: WARN, user: 'acme', ip: '127.0.0.1' });

  // A message with one unusable recipient: that RCPT is refused and logged, the message is submitted and logged.
  const info = await submit(pw.value.password).sendMail({ envelope: { from: 'app@sender.test', to: ['bob@rcpt.test', 'x@[127.0.0.1]'] }, raw: 'From: app@sender.test\r\nSubject: s\r\n\r\nbody\r\n' });
  t.same(info.rejected, ['x@[127.0.0.1]']);
  t.match(logs.lines.find((l) => l.msg === 'recipient refused' && l.component === 'submission'), {
    level: INFO, rcpt: 'x@[127.0.0.1]', reason: 'bad-address', reply: /^553 5\.1\.3 /,
  });
  const submitted = logs.lines.find((l) => l.msg === 'message submitted');
  t.match(submitted, { level: INFO, account: 'acme', mailFrom: 'app@sender.test', rcptTo: ['bob@rcpt.test'], reply: /^250 2\.0\.0 Ok: queued as \S+$/ });
  t.ok(submitted.size > 0, 'size logged');
  t.ok(info.response.endsWith(submitted.reply.split(' ').pop()), 'the queue id the client got');
});
