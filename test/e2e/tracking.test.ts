// End-to-end engagement: a tracked send is delivered with rewritten links and a pixel, a real client follows them,
// signed open/click webhooks arrive (checked with mailchannels-sdk), and the SDK's metrics methods read the figures.
import { authenticate } from 'mailauth';
import { MailChannels, Webhooks } from 'mailchannels-sdk';
import { simpleParser } from 'mailparser';
import { onBackends } from '../helpers/backends.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { isoTime, monthBefore } from '../../mta/queue/metrics.js';
import { BROWSER, trackedMail, trackingUrls, world } from '../helpers/tracking-world.js';
import { verifyWebhook } from '../helpers/webhook-receiver.js';

const HOUR = 3_600_000;

onBackends('a send with click and open tracking: rewritten links, a pixel, click and open events, metrics through the SDK', async (t, backend) => {
  const w = await world(t, {}, backend);
  const sent = await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: trackedMail(w.site.base) });
  t.equal(sent.status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  const delivered = w.sink.messages[0]!;
  const parsed = await simpleParser(delivered.raw);
  const html = String(parsed.html);
  const urls = trackingUrls(html);
  const base = w.stack.baseUrl;
  t.equal(urls.clicks.length, 2, 'both Shop links rewritten');
  t.equal(urls.clicks[0], urls.clicks[1], 'one token per distinct target');
  t.ok(urls.clicks[0]!.startsWith(`${base}/t/c/`), 'on http.public_url');
  t.notMatch(urls.clicks[0]!, /shop|%2F/i, 'the target is not in the tracking URL');
  t.match(html, `<a href="${w.site.base}/terms" clicktracking="off">Terms</a>`, 'clicktracking="off" left alone');
  t.match(html, '<a href="mailto:help@sender.test">Help</a>', 'mailto left alone');
  t.ok(urls.pixel?.startsWith(`${base}/t/o/`), 'the pixel');
  t.match(html, /<img src="[^"]+" width="1" height="1"[^>]*><\/body>/, 'at the end of the body');
  t.equal(parsed.text?.trim(), `Shop: ${w.site.base}/shop?a=1&b=2`, 'the text part is untouched');

  const verdict = await authenticate(delivered.raw, {
    ip: '127.0.0.1', helo: 'mx.sluice.test', sender: delivered.mailFrom, mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: w.dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'DKIM signed the rewritten body');

  // A person reads it five minutes later: the browser loads the pixel, then follows the link.
  w.stack.clock.advance(5 * 60_000);
  const pixel = await fetch(urls.pixel!, { headers: { 'User-Agent': BROWSER } });
  t.equal(pixel.status, 200);
  t.equal(pixel.headers.get('content-type'), 'image/gif');
  t.match(pixel.headers.get('cache-control'), /no-store/);
  const gif = Buffer.from(await pixel.arrayBuffer());
  t.equal(gif.length, 43);
  t.equal(gif.subarray(0, 6).toString('latin1'), 'GIF89a');
  const click = await fetch(urls.clicks[0]!, { headers: { 'User-Agent': BROWSER } });
  t.equal(click.status, 200, 'the redirect was followed');
  t.equal(click.url, `${w.site.base}/shop?a=1&b=2`, 'to the stored target');
  t.equal(await click.text(), 'landing');
  t.same(w.site.paths, ['/shop?a=1&b=2']);
  const head = await fetch(urls.clicks[0]!, { method: 'HEAD', redirect: 'manual', headers: { 'User-Agent': BROWSER } });
  t.equal(head.status, 302, 'HEAD answers like GET');
  t.equal((await w.events('click')).length, 1, 'but records nothing');

  // The webhook batch carries both events, signed; the SDK verifies them.
  await w.stack.webhookDispatcher.runOnce();
  const posted = w.receiver.posts.flatMap((p) => p.events);
  const publicKey = (id: string) => w.stack.api('GET', `/tx/v1/webhook/public-key?id=${encodeURIComponent(id)}`).then((r) => r.body?.key as string | undefined);
  for (const post of w.receiver.posts) {
    const keyId = /keyid="([^"]+)"/.exec(String(post.headers['signature-input']))![1]!;
    const headers = Object.fromEntries(Object.entries(post.headers).map(([k, v]) => [k, String(v)]));
    t.equal(await Webhooks.verify({ payload: post.raw.toString('utf8'), headers, publicKey: await publicKey(keyId) }), true, 'SDK verifies the batch');
    t.match(await verifyWebhook(post.headers, post.raw, publicKey, Math.floor(w.stack.clock.now() / 1000)), { ok: true });
  }
  const common = {
    email: 'news@sender.test', customer_handle: 'acme', request_id: sent.body.request_id, campaign_id: 'spring',
    recipients: ['bob@rcpt.test'], user_agent: BROWSER, ip: '127.0.0.1', smtp_id: `<${sent.body.results[0].message_id}>`,
  };
  t.same(posted.map((e) => e.event), ['processed', 'delivered', 'open', 'click']);
  t.match(posted[2], { ...common, event: 'open', timestamp: Math.floor(w.stack.clock.now() / 1000) });
  t.match(posted[3], { ...common, event: 'click', url: `${w.site.base}/shop?a=1&b=2` });
  t.notOk('machine' in posted[2] || 'machine' in posted[3], 'a person is not flagged');

  // Metrics through the SDK, pointed at Sluice.
  const mc = new MailChannels(w.key, { baseUrl: base });
  const engagement = await mc.metrics.engagement();
  t.equal(engagement.error, null);
  t.match(engagement.data, { open: 1, click: 1, openTrackingDelivered: 1, clickTrackingDelivered: 1 });
  const raw = (await w.stack.api('GET', '/tx/v1/metrics/engagement?campaign_id=spring', { key: w.key })).body;
  t.match(raw, {
    open: 1, click: 1, open_tracking_delivered: 1, click_tracking_delivered: 1, unique_open: 1, unique_click: 1,
    unique_open_tracking_delivered: 1, unique_click_tracking_delivered: 1, machine_open: 0, machine_click: 0,
  });
  const performance = await mc.metrics.performance();
  t.match(performance, { error: null, data: { processed: 1, delivered: 1, bounced: 0 } });
  const volume = await mc.metrics.volume({ campaignId: 'spring', interval: 'hour' });
  t.match(volume, { error: null, data: { processed: 1, delivered: 1, dropped: 0 } });
  // The default window: one calendar month before now (the real clock: its length varies) up to now's second.
  const hourly = (await w.stack.api('GET', '/tx/v1/metrics/volume?interval=hour', { key: w.key })).body;
  const now = w.stack.clock.now();
  t.match(hourly, { start_time: isoTime(Math.floor(monthBefore(now) / 1000) * 1000), end_time: isoTime(now + 1000) });
  t.equal(volume.data!.buckets.processed.length, Math.ceil((now + 1000 - Math.floor(monthBefore(now) / HOUR) * HOUR) / HOUR), 'every hour the default window touches');
  t.match(await mc.metrics.recipientBehaviour({ interval: 'week' }), { error: null, data: { unsubscribed: 0, unsubscribeDelivered: 0 } });
  t.match(await mc.metrics.senders('campaigns'), { error: null, data: { total: 1, senders: [{ name: 'spring', processed: 1, delivered: 1, bounced: 0, dropped: 0 }] } });
  t.match(await mc.metrics.senders('sub-accounts'), { error: null, data: { total: 0, senders: [] } });
  t.match(await mc.metrics.usage(), { error: null, data: { total: 1 } });
});

onBackends('machine traffic is flagged and counted apart: every hit counts, unique_* each message once, unique_human_* people', async (t, backend) => {
  const w = await world(t, {}, backend);
  t.equal((await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: trackedMail(w.site.base) })).status, 202);
  await w.stack.worker.runOnce();
  const urls = trackingUrls(String((await simpleParser(w.sink.messages[0]!.raw)).html));
  // A security gateway fetches every link as the message arrives; Gmail's proxy loads the pixel.
  await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
  await fetch(urls.pixel!, { headers: { 'User-Agent': 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)' } });
  // The specification: unique_open / unique_click "count distinct messages with at least one such event" — a message
  // whose only hits so far are machines' counts there; the machine-discounted figures are unique_human_*.
  const machinesOnly = (await w.stack.api('GET', '/tx/v1/metrics/engagement', { key: w.key })).body;
  t.match(machinesOnly, { open: 1, unique_open: 1, unique_human_open: 0, machine_open: 1, click: 1, unique_click: 1, unique_human_click: 0, machine_click: 1 });
  w.stack.clock.advance(60 * 60_000);
  await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
  await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
  await fetch(urls.pixel!, { headers: { 'User-Agent': BROWSER } });
  t.same((await w.events('click')).map((e) => [e.machine ?? false, e.machine_reason]), [[true, 'at-delivery'], [false, undefined], [false, undefined]]);
  t.same((await w.events('open')).map((e) => [e.machine ?? false, e.machine_reason]), [[true, 'image-proxy'], [false, undefined]]);
  const m = (await w.stack.api('GET', '/tx/v1/metrics/engagement', { key: w.key })).body;
  t.match(m, { click: 3, unique_click: 1, unique_human_click: 1, machine_click: 1, open: 2, unique_open: 1, unique_human_open: 1, machine_open: 1 });
});

onBackends('dry run shows the rewritten message; nothing is stored, so its links answer 404', async (t, backend) => {
  const w = await world(t, {}, backend);
  const res = await w.stack.api('POST', '/tx/v1/send?dry-run=true', { key: w.key, body: trackedMail(w.site.base) });
  t.equal(res.status, 200);
  const html = String((await simpleParser(Buffer.from(res.body.data[0]))).html);
  const urls = trackingUrls(html);
  t.equal(urls.clicks.length, 2);
  t.ok(urls.pixel);
  t.match(res.body.data[0], /^DKIM-Signature: /m, 'signed, like the real one');
  t.equal((await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } })).status, 404);
  t.equal((await w.events()).length, 0);
});

onBackends('without tracking_settings nothing is rewritten; text-only mail gets no tracking; a multi-recipient token names all', async (t, backend) => {
  const w = await world(t, {}, backend);
  const plain = trackedMail(w.site.base, { tracking_settings: undefined });
  const dry = async (body: unknown) => (await w.stack.api('POST', '/tx/v1/send?dry-run=true', { key: w.key, body })).body.data[0] as string;
  t.notMatch(await dry(plain), /\/t\/[co]\//);
  const textOnly = await dry({ ...trackedMail(w.site.base), content: [{ type: 'text/plain', value: `Go: ${w.site.base}/x` }] });
  t.notMatch(textOnly, /\/t\/[co]\//);
  // Two recipients share one body: the events name both.
  const two = trackedMail(w.site.base, { personalizations: [{ to: [{ email: 'bob@rcpt.test' }, { email: 'amy@rcpt.test' }] }] });
  t.equal((await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: two })).status, 202);
  await w.stack.worker.runOnce();
  const urls = trackingUrls(String((await simpleParser(w.sink.messages[0]!.raw)).html));
  w.stack.clock.advance(60_000);
  await fetch(urls.pixel!, { headers: { 'User-Agent': BROWSER } });
  t.same((await w.events('open'))[0].recipients, ['bob@rcpt.test', 'amy@rcpt.test']);
  const m = (await w.stack.api('GET', '/tx/v1/metrics/engagement', { key: w.key })).body;
  t.match(m, { open_tracking_delivered: 2, unique_open_tracking_delivered: 1, open: 1, unique_open: 1 }, 'recipients vs messages');
});

onBackends('unsubscribing: the event carries email, campaign_id and smtp_id; recipient-behaviour counts it', async (t, backend) => {
  const w = await world(t, {}, backend);
  const sent = await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: trackedMail(w.site.base, { transactional: false, tracking_settings: undefined }) });
  t.equal(sent.status, 202);
  await w.stack.worker.runOnce();
  const raw = w.sink.messages[0]!.raw.toString().replace(/\r\n[ \t]+/g, ' ');
  const url = /\r\nList-Unsubscribe: <([^>]+)>/.exec(raw)![1]!;
  const post = await fetch(url, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  t.equal(post.status, 200);
  t.same((await w.events('unsubscribed')), [{
    email: 'news@sender.test', customer_handle: 'acme', timestamp: Math.floor(w.stack.clock.now() / 1000), event: 'unsubscribed',
    request_id: sent.body.request_id, smtp_id: `<${sent.body.results[0].message_id}>`, campaign_id: 'spring', recipients: ['bob@rcpt.test'],
  }]);
  const m = (await w.stack.api('GET', '/tx/v1/metrics/recipient-behaviour?campaign_id=spring', { key: w.key })).body;
  t.match(m, { unsubscribed: 1, unsubscribe_delivered: 1 });
});

onBackends('links keep working for retention.tracking_days, then answer 404', async (t, backend) => {
  const w = await world(t, { SLUICE_RETENTION_TRACKING_DAYS: '30' }, backend);
  t.equal((await w.stack.api('POST', '/tx/v1/send', { key: w.key, body: trackedMail(w.site.base) })).status, 202);
  await w.stack.worker.runOnce();
  const urls = trackingUrls(String((await simpleParser(w.sink.messages[0]!.raw)).html));
  w.stack.clock.advance(29 * 86_400_000);
  t.match(await w.stack.retention.runOnce(), { tracking: 0 });
  t.equal((await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } })).status, 302, 'day 29');
  w.stack.clock.advance(2 * 86_400_000);
  t.match(await w.stack.retention.runOnce(), { tracking: 1 });
  t.equal((await fetch(urls.clicks[0]!, { redirect: 'manual', headers: { 'User-Agent': BROWSER } })).status, 404, 'day 31');
  t.equal((await fetch(urls.pixel!, { headers: { 'User-Agent': BROWSER } })).status, 404);
  t.equal((await w.events('click')).length, 1, 'only the click that was served');
});
