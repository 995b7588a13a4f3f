// Checks the console's sign-in throttle: failed sign-ins per client network are counted in the store, so two
// servers on one store (two nodes behind a balancer) refuse a guesser together, and the count lapses after a quiet
// window; a correct key is not what gets counted.
import { LOGIN_FAILURES, LOGIN_WINDOW_MS } from '../../control-api/console/router.js';
import { onBackends } from '../helpers/backends.js';
import { consoleClient } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

onBackends('failed sign-ins spread over two servers on one store add up; the network waits a quiet window', async (t, backend) => {
  const a = await startStack(t, { backend });
  // The second server on the first one's store: its data_dir on SQLite, its database on PostgreSQL (two nodes).
  const shared: Record<string, string> = backend === 'sqlite' ? { SLUICE_DATA_DIR: a.dataDir } : { SLUICE_STORAGE_POSTGRES_URL: a.env.SLUICE_STORAGE_POSTGRES_URL! };
  const b = await startStack(t, { backend, clock: a.clock, env: shared });
  const acme = await a.createAccount('acme');
  const clients = [a, b].map((s) => consoleClient(`http://127.0.0.1:${s.http.port}`));
  for (const c of clients) await c.get('/console/login');
  const ok = await clients[0]!.post('/console/login', { secret: acme.key });
  t.equal(ok.status, 302, 'a correct key signs in (and is not counted)');
  await clients[0]!.get('/console/login');

  for (let i = 0; i < LOGIN_FAILURES; i++) {
    const c = clients[i % 2]!;
    const res = await c.post('/console/login', { secret: `wrong-${i}` });
    t.equal(res.status, 403, `failure ${i + 1} on server ${i % 2 === 0 ? 'a' : 'b'}`);
    await c.get('/console/login');
  }
  for (const [i, c] of clients.entries()) {
    const refused = await c.post('/console/login', { secret: acme.key });
    t.equal(refused.status, 429, `server ${i === 0 ? 'a' : 'b'} refuses the network, even its correct key`);
    t.equal(refused.headers.get('retry-after'), String(LOGIN_WINDOW_MS / 1000));
  }
  a.clock.advance(LOGIN_WINDOW_MS - 1);
  t.equal((await clients[1]!.post('/console/login', { secret: acme.key })).status, 429, 'still within the window');
  a.clock.advance(1);
  await clients[1]!.get('/console/login');
  t.equal((await clients[1]!.post('/console/login', { secret: acme.key })).status, 302, 'a quiet window later: signed in');
});
