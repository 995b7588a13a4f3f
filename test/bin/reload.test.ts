// Checks SIGHUP on the built binary (sent by `sluice reload`): the log level, the transport map and the certificate
// change live, open SMTP sessions survive (a TLS one keeps its certificate), one line says what changed and what
// needs a restart, and a file that does not load is refused whole.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startSink } from '../helpers/smtp-sink.js';
import { smtpTalk } from '../helpers/smtp-talk.js';
import { tempDir, testEnv } from '../helpers/stack.js';

const fixture = (name: string) => path.resolve('test/fixtures/tls', name);
const fingerprint = (file: string) => new crypto.X509Certificate(fs.readFileSync(file)).fingerprint256;

t.test('SIGHUP: log level, transport map and certificate change live; open sessions survive', async (t) => {
  t.setTimeout(90_000);
  const sinkA = await startSink(t, { tls: false });
  const sinkB = await startSink(t, { tls: false });
  const dir = tempDir(t);
  const data = path.join(dir, 'data');
  const file = path.join(dir, 'sluice.toml');
  const write = (level: string, sinkPort: number, cert: string, key: string, http = '127.0.0.1:0') =>
    fs.writeFileSync(
      file,
      `[http]\nlisten = "${http}"\n[log]\nlevel = "${level}"\n[smtp.tls]\ncert = "${fixture(cert)}"\nkey = "${fixture(key)}"\n` +
        `[outbound]\nlockdown = "off"\ntransport_map = { "rcpt.test" = "127.0.0.1:${sinkPort}" }\n`,
    );
  write('info', sinkA.port, 'cert.pem', 'key.pem');
  // The level comes from the file here, so the helper's SLUICE_LOG_LEVEL and SLUICE_HTTP_LISTEN are left out.
  const server = serveBinary(t, data, { SLUICE_LOG_LEVEL: undefined, SLUICE_HTTP_LISTEN: undefined }, ['--config', file]);
  const info = await server.listening;
  const mxPort = Number(info.mx.split(':')[1]);
  const subPort = Number(info.submission.split(':')[1]);
  const send = (to: string) =>
    fetch(`http://${info.http}/tx/v1/send-async`, {
      method: 'POST',
      headers: { 'X-Api-Key': firstKey(data), 'Content-Type': 'application/json' },
      body: JSON.stringify({ personalizations: [{ to: [{ email: to }] }], from: { email: 'app@sender.test' }, subject: 's', content: [{ type: 'text/plain', value: 'x' }] }),
    });
  t.equal((await send('one@rcpt.test')).status, 202);
  await sinkA.waitFor(1);
  await server.waitForLine((l) => l.msg === 'delivery attempt' && l.level === 30);

  // Sessions opened before the reload: a plaintext MX session and a submission session in TLS.
  const mx = await smtpTalk(t, mxPort);
  t.match(await mx.send('EHLO client.test'), /^250/);
  const sub = await smtpTalk(t, subPort);
  await sub.send('EHLO client.test');
  t.equal((await sub.starttls()).fingerprint256, fingerprint(fixture('cert.pem')), 'the first certificate');
  t.match(await sub.send('EHLO client.test'), /^250-.*AUTH PLAIN LOGIN/s);

  // New file: quieter log, the domain routed to the other sink, the other certificate, and a key that needs a restart.
  write('warn', sinkB.port, 'other-cert.pem', 'other-key.pem', '127.0.0.1:1');
  const out: string[] = [];
  const code = await runCli(['reload', '--config', file], { stdout: (s) => out.push(s), stderr: (s) => out.push(s), env: testEnv(data), cwd: dir });
  t.equal(code, 0);
  t.equal(out.join(''), `sent SIGHUP to sluice serve (pid ${server.child.pid}, roles api,mx,submission,worker); its log says what changed\n`);
  const line = await server.waitForLine((l) => l.msg?.startsWith('configuration reloaded'));
  t.same(line.applied, ['smtp.tls.cert', 'smtp.tls.key', 'outbound.transport_map', 'log.level']);
  t.same(line.needs_restart, ['http.listen']);
  t.equal(line.tls, 'reloaded');
  t.equal(line.level, 30, 'the line is written before the level goes up to warn');
  t.equal(
    line.msg,
    'configuration reloaded: applied smtp.tls.cert, smtp.tls.key, outbound.transport_map, log.level; needs a restart: http.listen; certificate reloaded',
  );
  t.equal(server.child.exitCode, null, 'SIGHUP did not stop the server');
  const reloadedAt = server.lines.indexOf(line);

  // The open sessions go on: the MX one takes a transaction, the TLS one keeps its certificate and still answers.
  t.match(await mx.send('MAIL FROM:<a@sender.test>'), /^250/);
  t.match(await mx.send('RCPT TO:<u@unserved.test>'), /^550 5\.7\.1 /, 'refused at RCPT (an info line, now below the level)');
  t.match(await mx.send('QUIT'), /^221/);
  t.match(await sub.send('NOOP'), /^250/);
  t.equal(sub.peerCertificate()?.fingerprint256, fingerprint(fixture('cert.pem')), 'the open TLS session keeps its certificate');
  // A failed AUTH is a warn line: it shows, and shows that the info line before it was dropped, not delayed.
  t.match(await sub.send(`AUTH PLAIN ${Buffer.from('\u0000default\u0000wrong').toString('base64')}`), /^535 5\.7\.8/);
  await server.waitForLine((l) => l.msg === 'auth failed');
  t.notOk(server.lines.slice(reloadedAt).some((l) => l.msg === 'recipient refused'), 'info lines are off');

  // New sessions get the new certificate; new mail takes the new route.
  const fresh = await smtpTalk(t, subPort);
  await fresh.send('EHLO client.test');
  t.equal((await fresh.starttls()).fingerprint256, fingerprint(fixture('other-cert.pem')), 'a new session gets the new certificate');
  t.equal((await send('two@rcpt.test')).status, 202);
  const [second] = (await sinkB.waitFor(1)).slice(-1);
  t.same(second!.rcptTo, ['two@rcpt.test'], 'delivered over the new transport map entry');
  t.equal(sinkA.messages.length, 1);

  // A file that does not load is refused whole; the server goes on as it was.
  fs.writeFileSync(file, '[log\nlevel = "debug"\n');
  server.child.kill('SIGHUP');
  const refused = await server.waitForLine((l) => l.msg?.startsWith('reload refused'));
  t.equal(refused.level, 50);
  t.match(refused.msg, new RegExp(`^reload refused: ${file.replace(/[.]/g, '\\.')}:1:5: not valid TOML: .*; the running configuration stays$`));
  t.equal(server.child.exitCode, null);
  t.equal((await send('three@rcpt.test')).status, 202, 'still serving');
  await sinkB.waitFor(2);

  server.child.kill('SIGTERM');
  await exited(server.child);
  t.equal(server.child.exitCode, 0);
  const none = await runCli(['reload', '--config', file], { stdout: () => {}, stderr: (s) => out.push(s), env: testEnv(data), cwd: dir });
  t.equal(none, 2, 'the broken file is reported first');
  write('info', sinkB.port, 'cert.pem', 'key.pem');
  const stopped: string[] = [];
  t.equal(await runCli(['reload', '--config', file], { stdout: () => {}, stderr: (s) => stopped.push(s), env: testEnv(data), cwd: dir }), 1);
  t.equal(stopped.join(''), `sluice: no sluice serve is running on data_dir ${data}\n`, 'nothing to signal once it stopped');
});
