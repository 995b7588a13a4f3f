// Checks the rspamd /checkv2 adapter against a local HTTP server speaking rspamd's JSON, and against Debian's real
// rspamd on loopback (test/helpers/daemons.ts).
import http from 'node:http';
import net from 'node:net';
import t, { type Test } from 'tap';
import { GTUBE } from '../../../filters/spam-rules.js';
import { createRspamdClient, parseCheckReply } from '../../../mta/scanners/rspamd-client.js';
import { daemonsMissing, RSPAMD_SUSPECT_MARKER, startRspamd } from '../../helpers/daemons.js';
import { bufferSource } from '../../../storage/message-source.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

/** A local stand-in for rspamd's normal worker: records each request and answers with `reply(seen)`. */
async function fakeRspamd(t: Test, reply: (seen: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) };
      seen.push(s);
      reply(s, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, seen };
}

const RAW = Buffer.from('From: a@sender.test\r\nTo: b@corp.test\r\nSubject: x\r\n\r\nhello\r\n');
const MSG = { message: bufferSource(RAW), clientIp: '::ffff:192.0.2.7', helo: 'mail.sender.test', mailFrom: 'a@sender.test', rcptTo: ['b@corp.test', 'c@corp.test'], queueId: 'Q1' };

t.test('posts the message to /checkv2 with the envelope in rspamd headers; reads action, score, symbols', async (t) => {
  const rs = await fakeRspamd(t, (_s, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      is_skipped: false, score: 7.5, required_score: 15, action: 'add header',
      symbols: { R_SPF_FAIL: { name: 'R_SPF_FAIL', score: 1 }, BAYES_SPAM: { name: 'BAYES_SPAM', score: 6.5 } },
    }));
  });
  const client = createRspamdClient({ url: `${rs.url}/`, timeoutMs: 5000 });
  const r = await client.check(MSG);
  t.same(r, { ok: true, action: 'add header', score: 7.5, requiredScore: 15, symbols: ['BAYES_SPAM', 'R_SPF_FAIL'] });
  const req = rs.seen[0]!;
  t.equal(req.method, 'POST');
  t.equal(req.url, '/checkv2');
  t.equal(req.headers.ip, '192.0.2.7', 'IPv4-mapped address sent as IPv4');
  t.equal(req.headers.helo, 'mail.sender.test');
  t.equal(req.headers.from, 'a@sender.test');
  t.equal(req.headers['queue-id'], 'Q1');
  const rcpts = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i]!.toLowerCase() === 'rcpt').length;
  t.equal(rcpts, 2, 'one Rcpt header per recipient');
  t.same(req.body, RAW, 'the body is the message, byte for byte');
});

t.test('non-200, garbage and incomplete replies are failures, never a verdict', async (t) => {
  const modes = ['500', 'garbage', 'incomplete'];
  let i = 0;
  const rs = await fakeRspamd(t, (_s, res) => {
    const mode = modes[i++];
    if (mode === '500') { res.writeHead(500); res.end('oops'); return; }
    res.writeHead(200);
    res.end(mode === 'garbage' ? '<html>' : JSON.stringify({ score: 1 }));
  });
  const client = createRspamdClient({ url: rs.url, timeoutMs: 5000 });
  t.same(await client.check(MSG), { ok: false, error: 'rspamd: HTTP 500' });
  t.same(await client.check(MSG), { ok: false, error: 'rspamd: reply is not JSON' });
  t.same(await client.check(MSG), { ok: false, error: 'rspamd: reply lacks action or score' });
});

t.test('a scanner that never answers fails at the deadline; a closed port fails at once', async (t) => {
  const rs = await fakeRspamd(t, () => { /* never answers */ });
  const slow = await createRspamdClient({ url: rs.url, timeoutMs: 100 }).check(MSG);
  t.same(slow, { ok: false, error: 'rspamd: no answer within 100 ms' });
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const refused = await createRspamdClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 5000 }).check(MSG);
  t.equal(refused.ok, false);
  t.match(refused, { error: /ECONNREFUSED/ });
});

t.test('parseCheckReply', async (t) => {
  t.same(parseCheckReply({ action: 'no action', score: -0.1 }), { ok: true, action: 'no action', score: -0.1, requiredScore: NaN, symbols: [] });
  t.same(parseCheckReply(null), { ok: false, error: 'rspamd: reply is not an object' });
});

t.test('real rspamd (Debian package, minimal config of our own)', { skip: daemonsMissing() }, async (t) => {
  const rspamd = await startRspamd(t);
  t.comment(`rspamd started in ${rspamd.startupMs} ms`);
  const client = createRspamdClient({ url: rspamd.address, timeoutMs: 20_000 });
  const head = 'From: a@sender.test\r\nTo: b@corp.test\r\nSubject: x\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <g@sender.test>\r\n\r\n';
  const gtube = await client.check({ ...MSG, message: bufferSource(Buffer.from(`${head}${GTUBE}\r\n`)) });
  t.match(gtube, { ok: true, action: 'reject' });
  t.ok(gtube.ok && gtube.symbols.includes('GTUBE'));
  const suspect = await client.check({ ...MSG, user: 'acme', message: bufferSource(Buffer.from(`${head}hello ${RSPAMD_SUSPECT_MARKER}\r\n`)) });
  t.match(suspect, { ok: true, action: 'add header', score: 7, symbols: ['SLUICE_SUSPECT_MARKER'] });
  const ham = await client.check({ ...MSG, message: bufferSource(Buffer.from(`${head}See you at noon.\r\n`)) });
  t.match(ham, { ok: true, action: 'no action', score: 0 });
  await rspamd.stop();
  t.match(await client.check(MSG), { ok: false, error: /ECONNREFUSED/ }, 'a stopped rspamd is a failure');
});
