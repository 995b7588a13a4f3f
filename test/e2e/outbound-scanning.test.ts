// End-to-end outbound scanning: REST and submission → built-in rules, Debian's clamd (custom database) and rspamd
// → refused or sent, dispositions in every log row, scanner outages per filters.on_scanner_error, per-account policy.
import t from 'tap';
import { EICAR } from '../../filters/outbound-rules.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { daemonsMissing, RSPAMD_REJECT_MARKER, RSPAMD_SUSPECT_MARKER, startClamd, startRspamd, VIRUS_MARKER } from '../helpers/daemons.js';
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld, rawMail, type OutboundWorld } from '../helpers/outbound-world.js';
import { json, type PortStack } from '../helpers/stack.js';

const events = async (w: OutboundWorld<PortStack>) => (await w.stack.events(w.accountId)).map((e) => e.event);

/** The stored messages' verdicts and sizes, oldest first (no port lists messages by verdict). */
const stored = async (w: OutboundWorld<PortStack>) =>
  (await w.stack.sql<{ id: number; size: number; verdicts: unknown }>('SELECT id, size, verdicts FROM messages ORDER BY id')).map((m) => ({
    id: Number(m.id),
    size: Number(m.size),
    verdicts: json(m.verdicts) as unknown[] | null,
  }));
/** The verdicts of the stored message whose verdicts name `text`. */
const verdictsNaming = async (w: OutboundWorld<PortStack>, text: string) => (await stored(w)).find((m) => JSON.stringify(m.verdicts ?? '').includes(text))?.verdicts;

onBackends('GTUBE over REST is refused, nothing is delivered, the log search finds the attempt as CONFIRMED spam', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  const res = await w.rest(mail(`Hello ${GTUBE}`));
  t.equal(res.status, 403);
  t.same(res.body, { errors: ['message refused: spam (CONFIRMED)'] });
  t.equal(await w.deliveries('queued'), 0, 'nothing queued');
  t.equal(await w.stack.worker.runOnce(), 0);
  t.equal(w.sink.messages.length, 0, 'nothing delivered');
  const rows = await w.search({ spam_disposition: 'CONFIRMED' });
  t.equal(rows.length, 1);
  t.match(rows[0], {
    rcpt: 'bob@rcpt.test',
    sender: 'app@sender.test',
    sender_id: 'acme|x-authuser|app@sender.test',
    delivered: 'N',
    rspcode: '550',
    rspmsg: '5.7.1 message refused: spam (CONFIRMED)',
    spam_disposition: 'CONFIRMED',
    virus_disposition: 'UNKNOWN',
  });
  t.notOk('remediation_options' in rows[0], 'one refusal does not block the sender');
  t.same(await events(w), [], 'no webhook events for a refused send');
  t.equal(await w.stack.accounts.usage(w.accountId, '2026-11'), 0, 'not counted toward the monthly limit');
  const [refused] = await stored(w);
  t.equal((await w.stack.store.queue.findMessage(refused!.id))?.body, null, 'the refused body is not kept');
  t.ok(refused!.size > 0, 'its size is');
});

onBackends('POST /send reports the GTUBE personalization failed and sends the other', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  const res = await w.rest(
    {
      ...mail('{{text}}'),
      personalizations: [
        { to: [{ email: 'bob@rcpt.test' }], dynamic_template_data: { text: GTUBE } },
        { to: [{ email: 'carol@rcpt.test' }], dynamic_template_data: { text: 'lunch?' } },
      ],
      content: [{ type: 'text/plain', value: '{{text}}', template_type: 'mustache' }],
    },
    '/tx/v1/send',
  );
  t.equal(res.status, 202);
  t.match(res.body.results, [
    { index: 0, status: 'failed', reason: 'message refused: spam (CONFIRMED)' },
    { index: 1, status: 'sent' },
  ]);
  t.equal(await w.stack.worker.runOnce(), 1);
  t.same(w.sink.messages.map((m) => m.rcptTo), [['carol@rcpt.test']]);
  t.same((await w.search({ spam_disposition: 'CONFIRMED' })).map((r) => r.rcpt), ['bob@rcpt.test']);
  t.same((await w.search({ delivered: 'Y' })).map((r) => [r.rcpt, r.spam_disposition]), [['carol@rcpt.test', 'UNKNOWN']]);
});

onBackends('GTUBE over submission is refused with 550 5.7.1 and logged', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  t.match(await w.smtp(rawMail(GTUBE)), /^550 5\.7\.1 message refused: spam \(CONFIRMED\)/);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0);
  const rows = await w.search({ spam_disposition: 'CONFIRMED' });
  t.match(rows, [{ sender_id: 'acme|x-authuser|acme', auth: 'acme', rspcode: '550', delivered: 'N' }]);
  t.match(await w.smtp(rawMail('See you at noon.')), /^250 2\.0\.0 /, 'a clean message goes through');
});

// A built-in rule's verdict, logged as the GTUBE tests' are: once, on SQLite (CI time).
t.test('EICAR is a CONFIRMED virus without clamd', async (t) => {
  const w = await outboundWorld(t);
  const res = await w.rest(mail('see attachment', { attachments: [{ filename: 'eicar.com', content: Buffer.from(EICAR).toString('base64') }] }));
  t.equal(res.status, 403);
  t.same(res.body.errors, ['message refused: virus (CONFIRMED)']);
  t.match(await w.search({ virus_disposition: 'CONFIRMED' }), [{ spam_disposition: 'UNKNOWN', virus_disposition: 'CONFIRMED' }]);
});

onBackends('SUSPECT mail is sent and says so in every log row; a clean one is UNKNOWN', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  // Four URL heuristics: 2.5 + 3 + 1 + 1 = 7.5 ≥ filters.spam_threshold (5), < filters.confirmed_threshold (15).
  const html = '<a href="http://192.0.2.7/x">a</a> <a href="https://bank.test@evil.test/">c</a> <a href="https://evil.test/">https://bank.test/</a> <a href="https://bit.ly/x">b</a>';
  const res = await w.rest({ ...mail('x'), personalizations: [{ to: [{ email: 'bob@rcpt.test' }, { email: 'carol@rcpt.test' }] }], content: [{ type: 'text/html', value: html }] });
  t.equal(res.status, 202);
  t.equal(await w.stack.worker.runOnce(), 2);
  t.same((await w.search({ spam_disposition: 'SUSPECT' })).map((r) => [r.rcpt, r.delivered]).sort(), [['bob@rcpt.test', 'Y'], ['carol@rcpt.test', 'Y']]);
  const verdicts = (await stored(w))[0]?.verdicts;
  t.match(verdicts, [{ step: 'outbound-scan', policy: 'enforce', action: 'send', spam: { disposition: 'SUSPECT', score: 7.5, rules: [{ name: 'URL_IP_HOST' }, { name: 'URL_USERINFO' }, { name: 'URL_TEXT_MISMATCH' }, { name: 'URL_SHORTENER' }] } }]);
});

onBackends('per-account policy: monitor sends GTUBE and logs it, off scans nothing', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  const abuse = w.stack.services.abuse;
  await w.stack.store.senderAbuse.setScanPolicy(w.accountId, 'monitor', 0);
  t.equal(await abuse.policyOf((await w.stack.accounts.findById(w.accountId))!), 'monitor');
  t.equal((await w.rest(mail(GTUBE))).status, 202, 'monitor refuses nothing');
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal((await w.search({ spam_disposition: 'CONFIRMED' }))[0]?.delivered, 'Y');
  await w.stack.store.senderAbuse.setScanPolicy(w.accountId, 'off', 0);
  t.equal((await w.rest(mail(GTUBE))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.search({ spam_disposition: 'UNKNOWN' })).length, 1, 'not scanned: UNKNOWN');
});

// The scanners' answers and outages; what they store is the accept test's below. Once, on SQLite (CI time).
t.test('real clamd with a custom signature database, then stopped mid-run', { skip: daemonsMissing() }, async (t) => {
  const clamd = await startClamd(t);
  const w = await outboundWorld(t, { env: { SLUICE_FILTERS_CLAMD_ADDRESS: clamd.address } });
  const res = await w.rest(mail(`payload ${VIRUS_MARKER}`));
  t.equal(res.status, 403);
  t.same(res.body.errors, ['message refused: virus (CONFIRMED: Sluice.Test.Marker.UNOFFICIAL)']);
  t.match(await w.smtp(rawMail(`attached: ${VIRUS_MARKER}`)), /^550 5\.7\.1 message refused: virus \(CONFIRMED: Sluice\.Test\.Marker\.UNOFFICIAL\)/);
  t.equal((await w.search({ virus_disposition: 'CONFIRMED' })).length, 2, 'REST and submission attempts logged');
  t.equal((await w.rest(mail('nothing to see'))).status, 202, 'clean mail passes clamd');
  t.equal(await w.stack.worker.runOnce(), 1);

  await clamd.stop();
  const down = await w.rest(mail('nothing to see'));
  t.equal(down.status, 503, 'clamd down under tempfail: never a pass');
  t.equal(down.headers.get('retry-after'), '60');
  t.match(down.body.errors[0], /filter-error:clamd/);
  t.match(await w.smtp(rawMail('nothing to see')), /^451 4\.7\.1 /);
  t.equal(await w.deliveries('queued'), 0, 'nothing queued while clamd is down');
  t.equal(await w.stack.worker.runOnce(), 0);
  t.equal(w.sink.messages.length, 1);
});

onBackends('filters.on_scanner_error = accept sends with UNKNOWN and records the failure', async (t, backend) => {
  const clamd = await startClamd(t);
  const w = await outboundWorld(t, { backend, env: { SLUICE_FILTERS_CLAMD_ADDRESS: clamd.address, SLUICE_FILTERS_ON_SCANNER_ERROR: 'accept' } });
  await clamd.stop();
  t.equal((await w.rest(mail('hello'))).status, 202);
  t.equal((await w.rest(mail(`bad ${EICAR}`))).status, 403, 'EICAR stays CONFIRMED when clamd is down');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  const v = await verdictsNaming(w, 'scanner-error-accepted');
  t.match(v, [{ action: 'send', reason: 'scanner-error-accepted', virus: { disposition: 'UNKNOWN', reason: 'filter-error:clamd', clamd: { error: /ECONNREFUSED/ } } }]);
}, { skip: daemonsMissing() });

// rspamd's answers, stored as the SUSPECT test's verdicts are: once, on SQLite (its daemon's start is the cost).
t.test('real rspamd: reject is CONFIRMED, add header SUSPECT; stopped means 503', { skip: daemonsMissing() }, async (t) => {
  const rspamd = await startRspamd(t);
  const w = await outboundWorld(t, { env: { SLUICE_FILTERS_RSPAMD_URL: rspamd.address } });
  const refused = await w.rest(mail(`x ${RSPAMD_REJECT_MARKER}`));
  t.equal(refused.status, 403);
  t.equal((await w.rest(mail(`x ${RSPAMD_SUSPECT_MARKER}`))).status, 202);
  t.equal((await w.rest(mail('lunch at noon'))).status, 202);
  await w.stack.worker.runOnce();
  t.same((await w.search({ spam_disposition: 'CONFIRMED' })).map((r) => r.delivered), ['N']);
  t.same((await w.search({ spam_disposition: 'SUSPECT' })).map((r) => r.delivered), ['Y']);
  const v = await verdictsNaming(w, 'rspamd-reject');
  t.match(v, [{ spam: { disposition: 'CONFIRMED', reason: 'rspamd-reject', rspamd: { action: 'reject', symbols: ['SLUICE_REJECT_MARKER'] } } }]);
  await rspamd.stop();
  t.equal((await w.rest(mail('lunch at noon'))).status, 503);
  t.match(await w.smtp(rawMail('lunch at noon')), /^451 4\.7\.1 /);
});
