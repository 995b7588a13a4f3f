// End-to-end sending pools (issue 35): a message of a pool leaves from the pool's local address with that address's
// EHLO name (the receiving sink sees both), addresses take turns, an account's pool is set by the CLI and applies to
// its mail, and a send naming a pool that does not exist is refused with 400.
import { onBackends } from '../helpers/backends.js';
import { cliIn } from '../helpers/cli-in.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';

const POOLS = 'blue=127.0.0.2 mta2.sluice.test+127.0.0.3 mta3.sluice.test,green=127.0.0.4 mta4.sluice.test';

onBackends('pools: the sink sees the pool address and its EHLO name; account pools by CLI; an unknown pool is a 400', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_OUTBOUND_POOLS: POOLS } });
  const seen = () => w.sink.messages.map((m) => [m.session.remoteAddress.replace(/^::ffff:/, ''), m.session.hostNameAppearsAs]);

  /** Sends one message and delivers it: one at a time, so the pool's turns are in send order. */
  const sendOne = async (body: Record<string, unknown>) => {
    t.equal((await w.rest(body)).status, 202);
    t.equal(await w.stack.worker.runOnce(), 1);
  };
  await sendOne(mail('default'));
  await sendOne(mail('blue one', { headers: { 'X-Sluice-Pool': 'blue' } }));
  await sendOne(mail('blue two', { headers: { 'X-Sluice-Pool': 'Blue' } }));
  t.same(seen(), [['127.0.0.1', 'mx.sluice.test'], ['127.0.0.2', 'mta2.sluice.test'], ['127.0.0.3', 'mta3.sluice.test']], 'the pool\'s addresses in turn, each with its EHLO name');
  t.notOk(w.sink.messages.some((m) => /x-sluice-pool/i.test(m.raw.toString('latin1'))), 'the pool header is not passed on');

  const refused = await w.rest(mail('nowhere', { headers: { 'X-Sluice-Pool': 'red' } }));
  t.equal(refused.status, 400);
  t.match(refused.body.errors, [/X-Sluice-Pool names "red", which is not a pool of outbound.pools/]);

  // The account's own pool, set by the operator; an unknown one is refused by the CLI too.
  const env = w.stack.env;
  t.match(await cliIn(env, 'accounts', 'set-pool', '--account', 'acme', '--pool', 'red'), { code: 2, err: /--pool red is not a pool of outbound.pools \(blue, green\)/ });
  t.match(await cliIn(env, 'accounts', 'set-pool', '--account', 'acme', '--pool', 'green'), { code: 0, out: 'acme\tgreen\t(own)\n' });
  await sendOne(mail('account pool'));
  await sendOne(mail('message pool wins', { headers: { 'X-Sluice-Pool': 'blue' } }));
  t.same(seen().slice(3), [['127.0.0.4', 'mta4.sluice.test'], ['127.0.0.2', 'mta2.sluice.test']]);
  t.match(await cliIn(env, 'accounts', 'set-pool', '--account', 'acme', '--pool', 'none'), { code: 0, out: 'acme\tnone\t(default address)\n' });
});
