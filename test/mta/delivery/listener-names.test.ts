// Checks that the own-listener guard compares addresses, not names (issue 31 finding 6): a listener configured by
// name is resolved at start, also in a process that runs none of the listeners (roles split), and a name that does
// not resolve refuses the start.
import pino from 'pino';
import t from 'tap';
import { startServer } from '../../../bin/server.js';
import { loadConfig } from '../../../config/load.js';
import { resolveConfiguredListeners, type TargetGuard } from '../../../mta/delivery/target-guard.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { createClock, tempDir, testEnv } from '../../helpers/stack.js';

/** Port of the api process's listener in the split below: nothing binds it here (the worker only judges targets). */
const API_PORT = 18080;

t.test('roles split: the worker refuses a target that resolves to a listener configured by name', async (t) => {
  // A tenant's webhook host that resolves to the loopback (it may have been saved while it resolved elsewhere).
  const dns = await startDnsServer(t, { 'hook.example.test': { A: ['127.0.0.1'] } });
  const dataDir = tempDir(t);
  const env = testEnv(dataDir, {
    SLUICE_HTTP_LISTEN: `localhost:${API_PORT}`,
    SLUICE_DNS_SERVERS: dns.address,
    SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
  });
  const { config } = loadConfig({ env, cwd: dataDir });
  const worker = await startServer({ config, logger: pino({ level: 'silent' }), now: createClock().now, roles: ['worker'], startWorker: false });
  t.teardown(() => worker.close());
  t.equal(worker.http, undefined, 'the worker binds no HTTP listener of its own');
  // The control plane sees only screen(); the object is the guard every dialler of the worker uses.
  const guard = worker.services.targets as TargetGuard;
  t.same(
    await guard.resolve('hook.example.test', API_PORT),
    { ok: false, kind: 'refused', refused: [{ rule: 'own-listener', address: '127.0.0.1' }] },
    'a name resolving to 127.0.0.1 reaches http.listen = localhost:18080: refused',
  );
  t.same(await guard.resolve('127.0.0.1', API_PORT), { ok: false, kind: 'refused', refused: [{ rule: 'own-listener', address: '127.0.0.1' }] }, 'the literal too');
  t.same(await guard.resolve('hook.example.test', API_PORT + 1), { ok: true, addresses: ['127.0.0.1'], refused: [] }, 'another port: open by the network entry');
  const screened = await guard.screen('hook.example.test', API_PORT);
  t.equal(screened?.rule, 'own-listener', 'refused at save time too');
});

t.test('listener names resolve to every address; literals stay; a name that does not resolve names its key', async (t) => {
  const config = {
    http: { listen: { host: 'localhost', port: API_PORT }, plainListen: undefined, metricsListen: { host: '127.0.0.1', port: 0 } },
    smtp: { mx: { listen: { host: '0.0.0.0', port: 25 } }, submission: { listen: { host: '[::1]', port: 587 }, tlsListen: { host: 'mail.internal', port: 465 } } },
  };
  const names: Record<string, string[]> = { localhost: ['127.0.0.1', '::1'], 'mail.internal': ['10.1.2.3'] };
  const lookup = async (host: string) => {
    const found = names[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  t.same(await resolveConfiguredListeners(config, lookup), [
    { host: '127.0.0.1', port: API_PORT },
    { host: '::1', port: API_PORT },
    { host: '0.0.0.0', port: 25 },
    { host: '[::1]', port: 587 },
    { host: '10.1.2.3', port: 465 },
  ]);
  delete names['mail.internal'];
  await t.rejects(resolveConfiguredListeners(config, lookup), { message: 'smtp.submission.tls_listen: mail.internal does not resolve (ENOTFOUND)' });

  // Through the start itself: nothing opens, the error names the key.
  const dataDir = tempDir(t);
  const { config: full } = loadConfig({ env: testEnv(dataDir, { SLUICE_HTTP_LISTEN: `api.nowhere.test:${API_PORT}` }), cwd: dataDir });
  await t.rejects(
    startServer({ config: full, logger: pino({ level: 'silent' }), roles: ['worker'], startWorker: false, lookupListenerHost: lookup }),
    { message: /^http\.listen: api\.nowhere\.test does not resolve/ },
  );
});
