// Checks `sluice serve --only`: two processes on one data_dir, an api that accepts and a worker that delivers.
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startSink } from '../helpers/smtp-sink.js';
import { tempDir, testEnv } from '../helpers/stack.js';

t.test('an --only api process accepts a send; an --only worker process on the same data_dir delivers it', async (t) => {
  t.setTimeout(60_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off' };
  const dir = tempDir(t);

  const api = serveBinary(t, dir, env, ['--only', 'api']);
  const apiInfo = await api.listening;
  t.match(apiInfo, { http: /^127\.0\.0\.1:\d+$/, roles: 'api' });
  t.notOk('mx' in apiInfo || 'submission' in apiInfo, 'no SMTP listener in the api process');
  const worker = serveBinary(t, dir, env, ['--only', 'worker']);
  const workerInfo = await worker.listening;
  t.match(workerInfo, { roles: 'worker' });
  t.notOk('http' in workerInfo || 'mx' in workerInfo || 'submission' in workerInfo, 'the worker listens on nothing');

  const apiKey = firstKey(dir);
  const res = await fetch(`http://${apiInfo.http}/tx/v1/send-async`, {
    method: 'POST',
    headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'two roles',
      content: [{ type: 'text/plain', value: 'accepted by one process, delivered by another' }],
    }),
  });
  t.equal(res.status, 202);
  // The worker notices the api process's commit (PRAGMA data_version), not a timer 30 s away.
  await sink.waitFor(1);
  t.same(sink.messages[0]!.rcptTo, ['bob@rcpt.test']);
  t.match(sink.messages[0]!.raw.toString(), /\r\nSubject: two roles\r\n/);
  t.match(await worker.waitForLine((l) => l.msg === 'delivery attempt'), { outcome: 'delivered' }, 'the worker process delivered it');
  t.notOk(api.lines.some((l) => l.msg === 'delivery attempt'), 'the api process attempted nothing');

  // Health reports the listeners of this process only: an api process has no MX or submission to be down.
  const health = (await (await fetch(`http://${apiInfo.http}/healthz`)).json()) as { listeners: unknown };
  t.same(health.listeners, { http: true });
});

t.test('--only refuses an unknown role with exit 2 and names it', async (t) => {
  const out: string[] = [];
  const code = await runCli(['serve', '--only', 'api,mailer'], {
    stdout: (s) => void out.push(s),
    stderr: (s) => void out.push(s),
    env: testEnv(tempDir(t)),
    cwd: tempDir(t),
  });
  t.equal(code, 2);
  t.match(out.join(''), /--only: unknown role "mailer" \(roles: api, mx, submission, worker\)/);
});
