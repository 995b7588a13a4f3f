// Checks the clamd INSTREAM client against Debian's real clamd (custom signature database, loopback TCP and unix
// socket), and its failure answers: a stopped daemon, one that never answers, clamd's own errors.
import net from 'node:net';
import t from 'tap';
import { createClamdClient, parseInstreamReply } from '../../../mta/scanners/clamd-client.js';
import { bufferSource } from '../../../storage/message-source.js';
import { daemonsMissing, startClamd, VIRUS_MARKER } from '../../helpers/daemons.js';

const message = (body: string) => bufferSource(Buffer.from(`From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: x\r\n\r\n${body}\r\n`));

t.test('parseInstreamReply', async (t) => {
  t.same(parseInstreamReply('stream: OK\0'), { ok: true, infected: false });
  t.same(parseInstreamReply('stream: Win.Test.EICAR_HDB-1 FOUND\0'), { ok: true, infected: true, signature: 'Win.Test.EICAR_HDB-1' });
  t.same(parseInstreamReply('INSTREAM size limit exceeded. ERROR\0'), { ok: false, error: 'clamd: INSTREAM size limit exceeded. ERROR' });
  t.match(parseInstreamReply('<html>'), { ok: false, error: /unexpected reply/ });
  t.match(parseInstreamReply(''), { ok: false });
});

t.test('real clamd with a custom database', { skip: daemonsMissing() }, async (t) => {
  const clamd = await startClamd(t);
  t.comment(`clamd started in ${clamd.startupMs} ms`);
  const tcp = createClamdClient({ address: clamd.address, timeoutMs: 10_000 });
  t.same(await tcp.scan(message('hello')), { ok: true, infected: false }, 'clean');
  t.same(await tcp.scan(message(`payload ${VIRUS_MARKER} here`)), { ok: true, infected: true, signature: 'Sluice.Test.Marker.UNOFFICIAL' });
  t.match(await tcp.scan(message('SLUICE-TEST-HEURISTIC-MARKER')), { ok: true, infected: true, signature: /^Heuristics\.Sluice\.Test/ });
  t.match(await tcp.scan(message('SLUICE-TEST-PUA-MARKER')), { ok: true, infected: true, signature: /^PUA\.Sluice\.Test/ });
  // Several INSTREAM chunks: the marker straddles the 64 KiB chunk boundary.
  const big = bufferSource(Buffer.concat([Buffer.alloc(65_530, 'a'), Buffer.from(VIRUS_MARKER), Buffer.alloc(200_000, 'b')]));
  t.match(await tcp.scan(big), { ok: true, infected: true, signature: 'Sluice.Test.Marker.UNOFFICIAL' }, 'found across chunks');

  const unix = createClamdClient({ address: clamd.socketPath!, timeoutMs: 10_000 });
  t.same(await unix.scan(message(VIRUS_MARKER)), { ok: true, infected: true, signature: 'Sluice.Test.Marker.UNOFFICIAL' }, 'unix socket');

  await clamd.stop();
  const down = await tcp.scan(message(VIRUS_MARKER));
  t.match(down, { ok: false, error: /ECONNREFUSED/ }, 'a stopped clamd is a failure, never a clean answer');
});

t.test('a clamd that never answers fails at the deadline', async (t) => {
  const server = net.createServer((s) => s.on('data', () => {}).on('error', () => {}));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as net.AddressInfo).port;
  const r = await createClamdClient({ address: `127.0.0.1:${port}`, timeoutMs: 100 }).scan(message('x'));
  t.same(r, { ok: false, error: 'clamd: no answer within 100 ms' });
});

t.test('a server that closes without a reply is a failure', async (t) => {
  const server = net.createServer((s) => s.on('error', () => {}).resume().end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as net.AddressInfo).port;
  t.match(await createClamdClient({ address: `127.0.0.1:${port}`, timeoutMs: 5000 }).scan(message('x')), { ok: false });
});
