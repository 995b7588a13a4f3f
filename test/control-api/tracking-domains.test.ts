// Checks custom tracking domains against a local DNS server: 202 until the records exist, 201/200 after, 409s,
// sends that name them, the tracker serving them by Host, disabling, re-activation and deletion.
import http from 'node:http';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { startStack } from '../helpers/stack.js';
import { BROWSER, trackedMail, trackingUrls, world } from '../helpers/tracking-world.js';

const CTD = '/tx/v1/custom-tracking-domains';

/** GET with an explicit Host header (as a client reaching us through the custom name would send it). */
function get(port: number, path: string, host: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { Host: host, 'User-Agent': BROWSER } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('register: 202 with the records to publish until DNS verifies, then 201; conflicts are 409', async (t) => {
  const w = await world(t);
  const api = (method: string, path: string, body?: unknown, key = w.key) => w.stack.api(method, path, { key, ...(body ? { body } : {}) });
  const reg = { name: 'brand-click', hostname: 'Click.Brand.Test.', scope: 'click' };

  const first = await api('POST', CTD, reg);
  t.equal(first.status, 202);
  t.match(first.body, { token: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, txt_record_name: '_sluice-verify.click.brand.test' });
  t.equal(first.body.txt_record_value, first.body.token);
  t.match(first.body.instructions, /_sluice-verify\.click\.brand\.test/);
  t.match(first.body.instructions, /click\.brand\.test pointing at 127\.0\.0\.1/);
  t.same((await api('POST', CTD, reg)).body.token, first.body.token, 'the same token on every attempt');
  t.same((await api('GET', CTD)).body, { custom_tracking_domains: [], total: 0 }, 'nothing stored while pending');

  w.dns.zones['_sluice-verify.click.brand.test'] = { TXT: ['wrong-token'] };
  t.equal((await api('POST', CTD, reg)).status, 202, 'a TXT with another value does not verify');
  w.dns.zones['_sluice-verify.click.brand.test'] = { TXT: [first.body.token] };
  const half = await api('POST', CTD, reg);
  t.equal(half.status, 202, 'TXT in place, the name does not point here yet');
  t.notOk('token' in half.body, 'no token fields once the TXT verifies');
  t.match(half.body.instructions, /pointing at 127\.0\.0\.1/);
  w.dns.zones['click.brand.test'] = { A: ['127.0.0.1'] };
  const created = await api('POST', CTD, reg);
  t.equal(created.status, 201);
  t.same(created.body, { name: 'brand-click', hostname: 'click.brand.test', scope: 'click', status: 'active', created_at: new Date(w.stack.clock.now()).toISOString() });

  t.equal((await api('POST', CTD, reg)).status, 409, 'the same again');
  t.match((await api('POST', CTD, { ...reg, hostname: 'other.brand.test' })).body, { errors: ['a custom tracking domain named "brand-click" already exists'] });
  t.match((await api('POST', CTD, { ...reg, name: 'second' })).body, { errors: ['click.brand.test is already registered for click tracking'] });
  const other = await w.stack.createAccount('bravo');
  t.equal((await api('POST', CTD, { ...reg, name: 'theirs' }, other.key)).status, 409, 'the hostname+scope belongs to one account');
  t.same((await api('GET', CTD, undefined, other.key)).body, { custom_tracking_domains: [], total: 0 }, 'and is not theirs to see');
  t.equal((await api('POST', CTD, { name: 'brand-open', hostname: 'click.brand.test', scope: 'open' })).status, 201, 'the same host for another scope');

  for (const [body, field] of [
    [{ ...reg, name: 'Upper' }, /^name: /],
    [{ ...reg, name: 'x'.repeat(65) }, /^name: /],
    [{ ...reg, scope: 'bounce' }, /^scope: must be click, open or unsubscribe/],
    [{ ...reg, hostname: 'not a host' }, /^hostname: "not a host" is not a host name/],
    [{ ...reg, hostname: '192.0.2.1' }, /^hostname: /],
    [{ name: 'x', scope: 'click' }, /^hostname: /],
  ] as const) {
    const r = await api('POST', CTD, body);
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 60));
    t.match(r.body.errors[0], field);
  }
});

t.test('list: filters by name, status and scope; limit 1-1000 (default 100); total counts every match', async (t) => {
  const w = await world(t);
  const token = async (hostname: string) => (await w.stack.api('POST', CTD, { key: w.key, body: { name: 'probe', hostname, scope: 'click' } })).body.token;
  for (const [i, scope] of (['click', 'open', 'unsubscribe', 'click'] as const).entries()) {
    const hostname = `t${i}.brand.test`;
    w.dns.zones[`_sluice-verify.${hostname}`] = { TXT: [await token(hostname)] };
    w.dns.zones[hostname] = { A: ['127.0.0.1'] };
    t.equal((await w.stack.api('POST', CTD, { key: w.key, body: { name: `d${i}`, hostname, scope } })).status, 201);
  }
  await w.stack.api('PATCH', `${CTD}/t3.brand.test/click`, { key: w.key, body: { status: 'disabled' } });
  const list = async (q: string) => (await w.stack.api('GET', `${CTD}${q}`, { key: w.key })).body;
  t.same((await list('')).custom_tracking_domains.map((d: any) => d.name), ['d0', 'd1', 'd2', 'd3']);
  t.same(await list('?scope=click').then((b: any) => [b.total, b.custom_tracking_domains.map((d: any) => d.name)]), [2, ['d0', 'd3']]);
  t.same(await list('?status=disabled').then((b: any) => b.custom_tracking_domains.map((d: any) => d.name)), ['d3']);
  t.same(await list('?name=d2').then((b: any) => b.custom_tracking_domains.map((d: any) => d.hostname)), ['t2.brand.test']);
  t.same(await list('?limit=2&offset=1').then((b: any) => [b.total, b.custom_tracking_domains.map((d: any) => d.name)]), [4, ['d1', 'd2']]);
  for (const q of ['?limit=0', '?limit=1001', '?offset=-1', '?status=pending', '?scope=x']) {
    t.equal((await w.stack.api('GET', `${CTD}${q}`, { key: w.key })).status, 400, q);
  }
});

t.test('a send names its domain: links on that host, served by Host; disabled refused at send; re-activation checks DNS; delete breaks links', async (t) => {
  const w = await world(t);
  const port = w.stack.http.port;
  const register = async (name: string, hostname: string, scope: string) => {
    const pending = await w.stack.api('POST', CTD, { key: w.key, body: { name, hostname, scope } });
    w.dns.zones[`_sluice-verify.${hostname}`] = { TXT: [pending.body.token] };
    w.dns.zones[hostname] = { A: ['127.0.0.1'] };
    return w.stack.api('POST', CTD, { key: w.key, body: { name, hostname, scope } });
  };
  t.equal((await register('links', 'links.brand.test', 'click')).status, 201);
  t.equal((await register('pixels', 'img.brand.test', 'open')).status, 201);
  t.equal((await register('unsub', 'go.brand.test', 'unsubscribe')).status, 201);
  const body = trackedMail(w.site.base, {
    tracking_settings: { click_tracking: { enable: true, custom_domain_name: 'links' }, open_tracking: { enable: true, custom_domain_name: 'pixels' } },
  });
  t.equal((await w.stack.api('POST', '/tx/v1/send', { key: w.key, body })).status, 202);
  await w.stack.worker.runOnce();
  const urls = trackingUrls(String((await simpleParser(w.sink.messages[0]!.raw)).html));
  t.ok(urls.clicks[0]!.startsWith(`http://links.brand.test:${port}/t/c/`), urls.clicks[0]);
  t.ok(urls.pixel!.startsWith(`http://img.brand.test:${port}/t/o/`), String(urls.pixel));
  const clickPath = new URL(urls.clicks[0]!).pathname;
  const pixelPath = new URL(urls.pixel!).pathname;
  w.stack.clock.advance(60_000);
  t.same(await get(port, clickPath, `links.brand.test:${port}`), { status: 302, location: `${w.site.base}/shop?a=1&b=2` }, 'served on its host');
  t.equal((await get(port, pixelPath, 'IMG.brand.test.')).status, 200, 'any spelling of the host');
  t.equal((await get(port, clickPath, `127.0.0.1:${port}`)).status, 404, 'not on the public host');
  t.equal((await get(port, clickPath, 'img.brand.test')).status, 404, 'not on the open domain');
  t.equal((await w.events('click')).length, 1);

  // unsubscribe_settings puts List-Unsubscribe on its domain (the URL works there).
  const unsub = trackedMail(w.site.base, { transactional: false, tracking_settings: undefined, unsubscribe_settings: { custom_domain_name: 'unsub' } });
  const dry = (await w.stack.api('POST', '/tx/v1/send?dry-run=true', { key: w.key, body: unsub })).body.data[0] as string;
  t.match(dry.replace(/\r\n[ \t]+/g, ' '), new RegExp(`\\r\\nList-Unsubscribe: <http://go\\.brand\\.test:${port}/unsubscribe/[A-Za-z0-9_.-]+>`));

  // Refused at send: disabled, wrong scope, unknown, without enable, unsubscribe_settings on transactional mail.
  t.equal((await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: w.key, body: { status: 'disabled' } })).body.status, 'disabled');
  const refused = async (b: unknown) => (await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: b })).body;
  t.same(await refused(body), { errors: ['tracking_settings.click_tracking.custom_domain_name: custom tracking domain "links" is disabled'] });
  t.same(await refused(trackedMail(w.site.base, { tracking_settings: { click_tracking: { enable: true, custom_domain_name: 'pixels' } } })),
    { errors: ['tracking_settings.click_tracking.custom_domain_name: "pixels" is a tracking domain for open, not click'] });
  t.same(await refused(trackedMail(w.site.base, { tracking_settings: { open_tracking: { enable: true, custom_domain_name: 'nope' } } })),
    { errors: ['tracking_settings.open_tracking.custom_domain_name: no custom tracking domain named "nope"'] });
  t.same(await refused(trackedMail(w.site.base, { tracking_settings: { open_tracking: { custom_domain_name: 'pixels' } } })),
    { errors: ['tracking_settings.open_tracking.custom_domain_name: requires tracking_settings.open_tracking.enable: true'] });
  t.same(await refused(trackedMail(w.site.base, { unsubscribe_settings: { custom_domain_name: 'unsub' } })),
    { errors: ['unsubscribe_settings.custom_domain_name: applies to non-transactional mail only ("transactional": false)'] });
  t.equal(w.sink.messages.length, 1, 'nothing more was queued');
  t.equal((await get(port, clickPath, `links.brand.test:${port}`)).status, 302, 'mail already sent keeps working while disabled');

  // Re-activation checks DNS again: 202 and nothing changes while it fails.
  delete w.dns.zones['_sluice-verify.links.brand.test'];
  const again = await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: w.key, body: { status: 'active', name: 'renamed' } });
  t.equal(again.status, 202);
  t.match(again.body, { txt_record_name: '_sluice-verify.links.brand.test' });
  const listed = (await w.stack.api('GET', `${CTD}?scope=click`, { key: w.key })).body.custom_tracking_domains[0];
  t.match(listed, { name: 'links', status: 'disabled' });
  w.dns.zones['_sluice-verify.links.brand.test'] = { TXT: [again.body.token] };
  const active = await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: w.key, body: { status: 'active', name: 'renamed' } });
  t.equal(active.status, 200);
  t.match(active.body, { name: 'renamed', hostname: 'links.brand.test', scope: 'click', status: 'active' });
  t.equal((await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: w.key, body: { name: 'pixels' } })).status, 409, 'a name in use');
  t.equal((await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: w.key, body: {} })).status, 400, 'nothing to change');
  t.equal((await w.stack.api('PATCH', `${CTD}/nope.brand.test/click`, { key: w.key, body: { status: 'disabled' } })).status, 404);
  const bravo = await w.stack.createAccount('bravo');
  t.equal((await w.stack.api('PATCH', `${CTD}/links.brand.test/click`, { key: bravo.key, body: { status: 'disabled' } })).status, 404, 'another account\'s');
  t.equal((await w.stack.api('DELETE', `${CTD}/links.brand.test/click`, { key: bravo.key })).status, 404);

  // Deletion: links already sent on it stop working.
  t.equal((await w.stack.api('DELETE', `${CTD}/links.brand.test/click`, { key: w.key })).status, 204);
  t.equal((await get(port, clickPath, `links.brand.test:${port}`)).status, 404);
  t.equal((await w.stack.api('DELETE', `${CTD}/links.brand.test/click`, { key: w.key })).status, 404, 'gone');
  t.equal((await w.stack.api('DELETE', `${CTD}/links.brand.test/bounce`, { key: w.key })).status, 400, 'bad scope');
  t.equal((await w.events('click')).length, 2, 'only the clicks that were served');
});

t.test('a CNAME to the public host verifies; a sub-account may use its parent\'s domain', async (t) => {
  const dns = await startDnsServer(t, { 'track.sluice.test': { A: ['192.0.2.10'] } });
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_HTTP_PUBLIC_URL: 'https://track.sluice.test', SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acme = await stack.createAccount('acme');
  const body = { name: 'clicks', hostname: 'click.brand.test', scope: 'click' };
  const pending = await stack.api('POST', CTD, { key: acme.key, body });
  t.match(pending.body.instructions, /pointing at track\.sluice\.test/);
  dns.zones['_sluice-verify.click.brand.test'] = { TXT: [pending.body.token] };
  dns.zones['click.brand.test'] = { CNAME: 'Track.Sluice.Test.' };
  t.equal((await stack.api('POST', CTD, { key: acme.key, body })).status, 201);
  const sub = await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'shop1', company_name: 'Shop' } });
  t.equal(sub.status, 201);
  const subKey = (await stack.api('POST', '/tx/v1/sub-account/shop1/api-key', { key: acme.key })).body.key;
  const res = await stack.api('POST', '/tx/v1/send?dry-run=true', {
    key: subKey,
    body: { ...trackedMail('https://shop.test'), tracking_settings: { click_tracking: { enable: true, custom_domain_name: 'clicks' } } },
  });
  t.equal(res.status, 200);
  t.match(res.body.data[0], /https:\/\/click\.brand\.test\/t\/c\//, 'the scheme of http.public_url, the custom host');
  // Another account's token for the same hostname differs: it cannot take over a verified name.
  const bravo = await stack.createAccount('bravo');
  t.equal((await stack.api('POST', CTD, { key: bravo.key, body: { ...body, scope: 'open' } })).status, 202);
});
