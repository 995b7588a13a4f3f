// Checks that the tracker is no open redirect and trusts nothing but its own tokens: altered tokens, tokens on
// another host, crafted URLs and forged link indexes all get 404 and record nothing.
import http from 'node:http';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { signTrackingToken } from '../../mta/outbound/tracking-token.js';
import { BROWSER, trackedMail, trackingUrls, world } from '../helpers/tracking-world.js';

/** GET with an explicit Host header (fetch cannot set one): status, Location and body. */
function get(port: number, path: string, host: string): Promise<{ status: number; location: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { Host: host, 'User-Agent': BROWSER } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('tampered, misplaced and crafted tracking URLs: 404, and nothing recorded', async (t) => {
  const w = await world(t);
  t.equal((await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: trackedMail(w.site.base) })).status, 202);
  await w.stack.worker.runOnce();
  w.stack.clock.advance(60 * 60_000);
  const urls = trackingUrls(String((await simpleParser(w.sink.messages[0]!.raw)).html));
  const click = new URL(urls.clicks[0]!);
  const pixel = new URL(urls.pixel!);
  const port = w.stack.http.port;
  const host = `127.0.0.1:${port}`;
  const clickToken = click.pathname.split('/').pop()!;
  const pixelToken = pixel.pathname.split('/').pop()!;
  const recorded = async () => ({
    events: (await w.events()).filter((e) => e.event === 'open' || e.event === 'click').length,
    counters: w.stack.db.prepare('SELECT COALESCE(SUM(open + click + unique_open + unique_click), 0) AS n FROM metric_rollups').get(),
  });
  const before = await recorded();

  // One changed byte, anywhere in the token.
  const bytes = Buffer.from(clickToken, 'base64url');
  for (const i of [0, 1, 10, 17, 18, 19, 20, bytes.length - 1]) {
    const b = Buffer.from(bytes);
    b[i] = (b[i] as number) ^ 0x20;
    const r = await get(port, `/t/c/${b.toString('base64url')}`, host);
    t.equal(r.status, 404, `byte ${i} changed`);
    t.equal(r.location, undefined);
  }
  // A valid token on another host name (the tracker checks the Host it was issued for), and kinds swapped.
  for (const other of ['localhost', 'evil.test', `evil.test:${port}`, '127.0.0.2']) {
    t.equal((await get(port, click.pathname, other)).status, 404, `Host ${other}`);
    t.equal((await get(port, pixel.pathname, other)).status, 404, `pixel on Host ${other}`);
  }
  t.equal((await get(port, `/t/c/${pixelToken}`, host)).status, 404, 'an open token is no click token');
  t.equal((await get(port, `/t/o/${clickToken}`, host)).status, 404, 'and the other way round');

  // Crafted URLs that try to name a target: no parameter, no path part and no token can.
  const evil = 'https://evil.test/phish';
  // A query parameter is refused like on every route (unknown input → 400), before the tracker is asked.
  for (const path of [`${click.pathname}?url=${encodeURIComponent(evil)}`, `${click.pathname}?redirect=${encodeURIComponent(evil)}`]) {
    const r = await get(port, path, host);
    t.equal(r.status, 400, path.slice(0, 60));
    t.equal(r.location, undefined);
  }
  for (const path of [
    `${click.pathname}/${encodeURIComponent(evil)}`,
    `${click.pathname}/..%2F..%2Fevil.test`,
    `/t/c/${encodeURIComponent(evil)}`,
    `/t/c/${Buffer.from(evil).toString('base64url')}`,
    `/t/c//evil.test`,
    `/t/c/${clickToken}${Buffer.from(evil).toString('base64url')}`,
  ]) {
    const r = await get(port, path, host);
    t.equal(r.status, 404, path.slice(0, 60));
    t.equal(r.location, undefined);
  }
  // Even a token signed with the real secret gets no further than the links stored at send time.
  const secret = Buffer.from((await w.stack.store.settings.get('tracking_secret'))!, 'base64');
  const messageKey = Buffer.from(bytes.subarray(1, 17));
  const forged = signTrackingToken(secret, 'click', '127.0.0.1', { messageKey, recipient: 0, link: 5 });
  t.equal((await get(port, `/t/c/${forged}`, host)).status, 404, 'a link index that was never stored');
  const otherRecipient = signTrackingToken(secret, 'click', '127.0.0.1', { messageKey, recipient: 3, link: 0 });
  t.equal((await get(port, `/t/c/${otherRecipient}`, host)).status, 404, 'a recipient index the message does not have');

  t.same(await recorded(), before, 'no event and no counter');
  t.same(w.site.paths, [], 'nothing was ever redirected');

  // The genuine URL still works, and only it is counted.
  const ok = await get(port, click.pathname, host);
  t.equal(ok.status, 302);
  t.equal(ok.location, `${w.site.base}/shop?a=1&b=2`);
  t.equal((await recorded()).events, before.events + 1);
});
