// Fault tests of the spool with real processes: kill -9 of `sluice serve` while it delivers a spooled 28 MB message
// (delivered after the restart, its file kept until retention frees it, no orphan), and kill -9 in the middle of a
// 28 MB DATA on the MX (nothing stored, nothing left for the sweep).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import nodemailer from 'nodemailer';
import t, { type Test } from 'tap';
import { openSqliteStore } from '../../storage/sqlite/store.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { spoolFiles } from '../helpers/old-data-dir.js';
import { BIN, exited, serveBinary } from '../helpers/serve-binary.js';
import { startSink, type SinkOptions } from '../helpers/smtp-sink.js';
import { tempDir, testEnv } from '../helpers/stack.js';

const BIG = 28_000_000;
const DAY = 86_400_000;
const hostPort = (s: string) => ({ host: s.slice(0, s.lastIndexOf(':')), port: Number(s.slice(s.lastIndexOf(':') + 1)) });

/** A body of about `size` bytes in whole 76-character lines (what a base64 attachment looks like), unique per `seed`. */
function bodyOf(size: number, seed: string): Buffer {
  const line = Buffer.from(`${crypto.createHash('sha256').update(seed).digest('base64').slice(0, 40).padEnd(74, 'x')}\r\n`);
  return Buffer.concat(Array.from({ length: Math.floor(size / line.length) }, () => line));
}

/** A serve whose MX relays corp.test to `downstream`; returns the process and how to start it again. */
async function mxServe(t: Test, dir: string, sink: SinkOptions = {}) {
  const downstream = await startSink(t, { tls: false, ...sink });
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  // A short lease: what the killed process held is taken over by the restarted one within seconds.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_QUEUE_LEASE_SECONDS: '2' };
  const first = serveBinary(t, dir, env);
  const info = await first.listening;
  const created = JSON.parse(
    execFileSync(process.execPath, [BIN, 'keys', 'create', '--account', 'default', '--scope', 'inbound', '--json'], { env: { ...process.env, ...testEnv(dir), ...env } }).toString(),
  );
  const prov = await fetch(`http://${info.http}/inbound/v1/domains`, {
    method: 'POST',
    headers: { 'X-Api-Key': created.key ?? created.api_key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: downstream.port, target: '127.0.0.1' }] }),
  });
  t.equal(prov.status, 201, 'domain provisioned');
  return { first, mx: hostPort(info.mx), downstream, again: () => serveBinary(t, dir, env) };
}

t.test('kill -9 while a spooled 28 MB message is being delivered: delivered after the restart, byte-identical; no orphan', async (t) => {
  t.setTimeout(240_000);
  const dir = tempDir(t);
  // The downstream holds the first delivery after reading the whole body (the worker has streamed it from the spool).
  let reached!: () => void;
  const deliveryInFlight = new Promise<void>((r) => (reached = r));
  let holds = 1;
  const { first, mx, downstream, again } = await mxServe(t, dir, {
    beforeAccept: () => (holds-- > 0 ? (reached(), new Promise<void>(() => {})) : undefined),
  });
  const body = bodyOf(BIG, 'deliver');
  const transport = nodemailer.createTransport({ host: mx.host, port: mx.port, secure: false, ignoreTLS: true, name: 'client.sender.test' });
  await transport.sendMail({
    envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] },
    raw: Buffer.concat([Buffer.from('From: alice@sender.test\r\nTo: bob@corp.test\r\nSubject: big-one\r\nMessage-ID: <big-one@sender.test>\r\n\r\n'), body]),
  });
  transport.close();
  t.equal(spoolFiles(dir).length, 1, 'the 250 came after the body was spooled');
  await deliveryInFlight;
  first.child.kill('SIGKILL');
  await exited(first.child);

  const second = again();
  await second.listening;
  const [got] = await downstream.waitFor(1);
  const raw = got!.raw;
  const at = raw.indexOf('\r\n\r\n');
  t.match(raw.subarray(0, at).toString(), /\r\nSubject: big-one/);
  t.ok(raw.subarray(at + 4).equals(body), `the 28 MB body arrived byte-identical: 0 lost (${raw.length - at - 4} of ${body.length} bytes)`);
  second.child.kill('SIGTERM');
  await exited(second.child);

  const store = openSqliteStore(dir, { now: Date.now });
  t.teardown(() => store.close());
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'no orphan: the one file is the delivered message\'s body');
  t.equal(spoolFiles(dir).length, 1, 'kept for retention.message_days, like an inline body');
  await store.retention.pruneBodies({ before: Date.now() + 8 * DAY, limit: 100 });
  t.same(spoolFiles(dir), [], 'retention removed the file with its row');
});

t.test('kill -9 in the middle of a 28 MB DATA on the MX: nothing stored, nothing for the sweep', async (t) => {
  t.setTimeout(240_000);
  const dir = tempDir(t);
  const { first, mx, again } = await mxServe(t, dir);
  const socket = net.connect(mx.port, mx.host);
  let replies = '';
  const reply = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => ((replies.match(/^\d{3} /gm)?.length ?? 0) >= n ? (socket.off('data', onData), resolve()) : undefined);
      const onData = (d: Buffer) => ((replies += d.toString()), check());
      socket.on('data', onData);
      check();
    });
  socket.on('error', () => {}); // the server dies under it
  await reply(1);
  for (const [i, cmd] of ['EHLO client.sender.test', 'MAIL FROM:<alice@sender.test>', 'RCPT TO:<bob@corp.test>', 'DATA'].entries()) {
    socket.write(`${cmd}\r\n`);
    await reply(i + 2);
  }
  t.match(replies, /\r\n354 /, 'DATA accepted');
  socket.write('From: alice@sender.test\r\nTo: bob@corp.test\r\nSubject: cut\r\n\r\n');
  // 20 of the 28 MB, each chunk's write awaited (TCP backpressure: the server has read nearly all of it).
  const chunk = bodyOf(1 << 20, 'cut');
  for (let i = 0; i < 20; i++) await new Promise<void>((r, j) => socket.write(chunk, (err) => (err ? j(err) : r())));
  first.child.kill('SIGKILL');
  await exited(first.child);
  socket.destroy();

  const second = again();
  await second.listening;
  second.child.kill('SIGTERM');
  await exited(second.child);
  const store = openSqliteStore(dir, { now: Date.now });
  t.teardown(() => store.close());
  t.equal((store.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n, 0, 'no message row');
  t.equal((store.db.prepare('SELECT count(*) AS n FROM inbound_quarantine').get() as { n: number }).n, 0, 'nothing quarantined');
  t.same(spoolFiles(dir), [], 'no spool file, not even a temp one');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'nothing for the sweep');
  const tmp = path.join(dir, 'tmp');
  t.same(fs.existsSync(tmp) ? fs.readdirSync(tmp) : [], [], 'no scratch file left (they are unlinked at creation)');
});
