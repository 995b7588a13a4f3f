// End-to-end outbound scanning: REST and submission → built-in rules, Debian's clamd (custom database) and rspamd
// → refused or sent, dispositions in every log row, scanner outages per filters.on_scanner_error, per-account policy.
import t from 'tap';
import { EICAR } from '../../filters/outbound-rules.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { daemonsMissing, RSPAMD_REJECT_MARKER, RSPAMD_SUSPECT_MARKER, startClamd, startRspamd, VIRUS_MARKER } from '../helpers/daemons.js';
import { mail, outboundWorld, rawMail, type OutboundWorld } from '../helpers/outbound-world.js';

const events = (w: OutboundWorld) =>
  (w.stack.db.prepare('SELECT event FROM events WHERE account_id = ?').all(w.accountId) as { event: string }[]).map((e) => e.event);

t.test('GTUBE over REST is refused, nothing is delivered, the log search finds the attempt as CONFIRMED spam', async (t) => {
  const w = await outboundWorld(t);
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
  t.same(events(w), [], 'no webhook events for a refused send');
  t.equal(await w.stack.accounts.usage(w.accountId, '2026-11'), 0, 'not counted toward the monthly limit');
  const body = w.stack.db.prepare('SELECT coalesce(length(b.body), 0) AS n, m.size FROM messages m LEFT JOIN message_bodies b ON b.message_id = m.id').get() as { n: number; size: number };
  t.equal(body.n, 0, 'the refused body is not kept');
  t.ok(body.size > 0, 'its size is');
});

t.test('POST /send reports the GTUBE personalization failed and sends the other', async (t) => {
  const w = await outboundWorld(t);
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

t.test('GTUBE over submission is refused with 550 5.7.1 and logged', async (t) => {
  const w = await outboundWorld(t);
  t.match(await w.smtp(rawMail(GTUBE)), /^550 5\.7\.1 message refused: spam \(CONFIRMED\)/);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0);
  const rows = await w.search({ spam_disposition: 'CONFIRMED' });
  t.match(rows, [{ sender_id: 'acme|x-authuser|acme', auth: 'acme', rspcode: '550', delivered: 'N' }]);
  t.match(await w.smtp(rawMail('See you at noon.')), /^250 2\.0\.0 /, 'a clean message goes through');
});

t.test('EICAR is a CONFIRMED virus without clamd', async (t) => {
  const w = await outboundWorld(t);
  const res = await w.rest(mail('see attachment', { attachments: [{ filename: 'eicar.com', content: Buffer.from(EICAR).toString('base64') }] }));
  t.equal(res.status, 403);
  t.same(res.body.errors, ['message refused: virus (CONFIRMED)']);
  t.match(await w.search({ virus_disposition: 'CONFIRMED' }), [{ spam_disposition: 'UNKNOWN', virus_disposition: 'CONFIRMED' }]);
});

t.test('SUSPECT mail is sent and says so in every log row; a clean one is UNKNOWN', async (t) => {
  const w = await outboundWorld(t);
  // Three URL heuristics: 2.5 + 3 + 1 = 6.5 ≥ filters.spam_threshold (5), < filters.confirmed_threshold (15).
  const html = '<a href="http://192.0.2.7/x">a</a> <a href="https://evil.test/">https://bank.test/</a> <a href="https://bit.ly/x">b</a>';
  const res = await w.rest({ ...mail('x'), personalizations: [{ to: [{ email: 'bob@rcpt.test' }, { email: 'carol@rcpt.test' }] }], content: [{ type: 'text/html', value: html }] });
  t.equal(res.status, 202);
  t.equal(await w.stack.worker.runOnce(), 2);
  t.same((await w.search({ spam_disposition: 'SUSPECT' })).map((r) => [r.rcpt, r.delivered]).sort(), [['bob@rcpt.test', 'Y'], ['carol@rcpt.test', 'Y']]);
  const verdicts = JSON.parse((w.stack.db.prepare('SELECT verdicts FROM messages').get() as { verdicts: string }).verdicts);
  t.match(verdicts, [{ step: 'outbound-scan', policy: 'enforce', action: 'send', spam: { disposition: 'SUSPECT', score: 6.5, rules: [{ name: 'URL_IP_HOST' }, { name: 'URL_TEXT_MISMATCH' }, { name: 'URL_SHORTENER' }] } }]);
});

t.test('per-account policy: monitor sends GTUBE and logs it, off scans nothing', async (t) => {
  const w = await outboundWorld(t);
  const abuse = w.stack.services.abuse;
  w.stack.db.prepare("INSERT INTO account_scan_policies (account_id, policy, updated_at) VALUES (?, 'monitor', 0)").run(w.accountId);
  t.equal(await abuse.policyOf((await w.stack.accounts.findById(w.accountId))!), 'monitor');
  t.equal((await w.rest(mail(GTUBE))).status, 202, 'monitor refuses nothing');
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal((await w.search({ spam_disposition: 'CONFIRMED' }))[0]?.delivered, 'Y');
  w.stack.db.prepare("UPDATE account_scan_policies SET policy = 'off' WHERE account_id = ?").run(w.accountId);
  t.equal((await w.rest(mail(GTUBE))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.search({ spam_disposition: 'UNKNOWN' })).length, 1, 'not scanned: UNKNOWN');
});

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

t.test('filters.on_scanner_error = accept sends with UNKNOWN and records the failure', { skip: daemonsMissing() }, async (t) => {
  const clamd = await startClamd(t);
  const w = await outboundWorld(t, { env: { SLUICE_FILTERS_CLAMD_ADDRESS: clamd.address, SLUICE_FILTERS_ON_SCANNER_ERROR: 'accept' } });
  await clamd.stop();
  t.equal((await w.rest(mail('hello'))).status, 202);
  t.equal((await w.rest(mail(`bad ${EICAR}`))).status, 403, 'EICAR stays CONFIRMED when clamd is down');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  const v = JSON.parse((w.stack.db.prepare("SELECT verdicts FROM messages WHERE size > 0 AND verdicts LIKE '%scanner-error-accepted%'").get() as { verdicts: string }).verdicts);
  t.match(v, [{ action: 'send', reason: 'scanner-error-accepted', virus: { disposition: 'UNKNOWN', reason: 'filter-error:clamd', clamd: { error: /ECONNREFUSED/ } } }]);
});

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
  const v = JSON.parse((w.stack.db.prepare("SELECT verdicts FROM messages WHERE verdicts LIKE '%rspamd-reject%'").get() as { verdicts: string }).verdicts);
  t.match(v, [{ spam: { disposition: 'CONFIRMED', reason: 'rspamd-reject', rspamd: { action: 'reject', symbols: ['SLUICE_REJECT_MARKER'] } } }]);
  await rspamd.stop();
  t.equal((await w.rest(mail('lunch at noon'))).status, 503);
  t.match(await w.smtp(rawMail('lunch at noon')), /^451 4\.7\.1 /);
});
