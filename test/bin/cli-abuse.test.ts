// Checks the abuse-control commands against a running server on the same data_dir: senders list|unblock,
// accounts scan-policy, monitors list|create|delete|alerts.
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { mail, outboundWorld, type OutboundWorld } from '../helpers/outbound-world.js';
import { testEnv } from '../helpers/stack.js';

const ID = 'acme|x-authuser|app@sender.test';

function cliOf(w: OutboundWorld) {
  return async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const env = testEnv(w.stack.dataDir);
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd: w.stack.dataDir, now: w.stack.clock.now });
    return { code, out: out.join(''), err: err.join('') };
  };
}

t.test('sluice senders list|unblock', async (t) => {
  const w = await outboundWorld(t, { env: { SLUICE_ABUSE_BLOCK_CONFIRMED: '1' } });
  const cli = cliOf(w);
  t.same(await cli('senders', 'list'), { code: 0, out: 'no blocked sender identities\n', err: '' });
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail('x'))).status, 403, 'blocked');

  const listed = await cli('senders', 'list', '--json');
  t.equal(listed.code, 0, listed.err);
  const rows = JSON.parse(listed.out);
  t.match(rows, [{ account: 'acme', sender_id: ID, envelope_sender: 'app@sender.test', reason: '1 CONFIRMED spam or virus messages within 24 h', lifted_at: null }]);
  t.match((await cli('senders', 'list', '--account', 'acme')).out, /^ACCOUNT\tSENDER\tSTATE\tBLOCKED\tREASON\nacme\tacme\|x-authuser\|app@sender\.test\tblocked\t2026-11-22T12:00:00\.000Z\t1 CONFIRMED/);

  t.match(await cli('senders', 'unblock', '--account', 'acme'), { code: 2, err: /--sender SENDER_ID/ });
  t.match(await cli('senders', 'unblock', '--account', 'nosuch', '--sender', ID), { code: 1, err: /no account "nosuch"/ });
  t.same(await cli('senders', 'unblock', '--account', 'acme', '--sender', ID), { code: 0, out: `unblocked ${ID}\n`, err: '' });
  t.equal((await w.rest(mail('x'))).status, 202, 'the identity sends again');
  t.match(await cli('senders', 'unblock', '--account', 'acme', '--sender', ID), { code: 1, err: /is not blocked/ });
  t.same(JSON.parse((await cli('senders', 'list', '--json')).out), [], 'nothing blocked');
  t.match(JSON.parse((await cli('senders', 'list', '--all', '--json')).out), [{ sender_id: ID, lifted_by: 'operator' }]);
  t.match(await cli('senders', 'frobnicate'), { code: 2, err: /usage: sluice senders list\|unblock/ });
});

t.test('sluice accounts scan-policy', async (t) => {
  const w = await outboundWorld(t);
  const cli = cliOf(w);
  t.same(await cli('accounts', 'scan-policy', '--account', 'acme'), { code: 0, out: 'acme\tenforce\t(filters.outbound_policy)\n', err: '' });
  t.match(await cli('accounts', 'scan-policy', '--account', 'acme', '--policy', 'lenient'), { code: 2, err: /--policy must be one of enforce, monitor, off, default/ });
  t.same(JSON.parse((await cli('accounts', 'scan-policy', '--account', 'acme', '--policy', 'monitor', '--json')).out), { account: 'acme', policy: 'monitor', source: 'own' });
  t.equal((await w.rest(mail(GTUBE))).status, 202, 'monitor: sent, logged');
  t.same((await w.search({ spam_disposition: 'CONFIRMED' })).length, 1);
  t.equal((await cli('accounts', 'scan-policy', '--account', 'acme', '--policy', 'default')).out, 'acme\tenforce\t(filters.outbound_policy)\n');
  t.equal((await w.rest(mail(GTUBE))).status, 403, 'enforce again');
});

t.test('sluice monitors list|create|delete|alerts', async (t) => {
  const w = await outboundWorld(t);
  const cli = cliOf(w);
  t.same(await cli('monitors', 'list', '--account', 'acme'), { code: 0, out: 'no monitors\n', err: '' });
  const create = (...extra: string[]) => cli('monitors', 'create', '--account', 'acme', ...extra);
  t.match(await create('--condition', 'nope', '--interval', '1', '--email', 'ops@alerts.test'), { code: 2, err: /--condition must be one of sender_id_sending_spam/ });
  t.match(await create('--condition', 'sender_id_blocked', '--interval', '25', '--email', 'ops@alerts.test'), { code: 2, err: /--interval must be a whole number of hours from 1 to 24/ });
  t.match(await create('--condition', 'sender_id_blocked', '--interval', '1'), { code: 2, err: /exactly one of --webhook URL and --email ADDRESS/ });
  t.match(await create('--condition', 'sender_id_blocked', '--interval', '1', '--email', 'a@b.test', '--webhook', 'http://x.test/'), { code: 2, err: /exactly one/ });
  t.match(await create('--condition', 'sender_id_blocked', '--interval', '1', '--email', 'not an address'), { code: 2, err: /--email: not a valid email address/ });
  t.match(await create('--condition', 'sender_id_blocked', '--interval', '1', '--webhook', 'ftp://x.test/'), { code: 2, err: /--webhook: must be an absolute http/ });

  const made = await create('--condition', 'sender_id_sending_spam', '--interval', '6', '--email', 'ops@alerts.test', '--json');
  t.equal(made.code, 0, made.err);
  const m = JSON.parse(made.out);
  t.match(m, { id: Number, condition: 'sender_id_sending_spam', interval_hours: 6, delivery: 'email', email: 'ops@alerts.test' });
  t.same((await w.stack.api('GET', '/tx/v1/monitors', { key: w.key })).body, [m], 'the API sees what the CLI made');
  t.equal((await cli('monitors', 'list', '--account', 'acme')).out, `ID\tCONDITION\tINTERVAL\tDELIVERY\tTO\n${m.id}\tsender_id_sending_spam\t6h\temail\tops@alerts.test\n`);

  t.equal((await w.rest(mail(GTUBE))).status, 403);
  const alerts = JSON.parse((await cli('monitors', 'alerts', '--account', 'acme', '--json')).out);
  t.match(alerts, [{ sender_id: ID, state: 'pending', attempts: 0, payload: { condition_name: 'sender_id_sending_spam' } }]);
  t.same(await cli('monitors', 'delete', '--account', 'acme', '--id', String(m.id)), { code: 0, out: `deleted monitor ${m.id}\n`, err: '' });
  t.match(await cli('monitors', 'delete', '--account', 'acme', '--id', String(m.id)), { code: 1, err: /no monitor/ });
  t.equal(JSON.parse((await cli('monitors', 'alerts', '--account', 'acme', '--json')).out).length, 1, 'its alert stays');
});
