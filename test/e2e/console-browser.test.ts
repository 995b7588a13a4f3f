// Drives the web console in a real browser (Debian's chromium through playwright-core): a tenant signs in, retries a
// deferred delivery and sees it delivered, releases a quarantined message (signed in with its inbound key: the
// session keeps the key's scope) and sees it arrive downstream, finds a
// message by recipient in the log search, and cannot open another tenant's queue entry by editing the URL; the
// operator signs in with a `sluice console token` and sees every account and the deliverability chart (opens and
// clicks too); a domain admin follows a login link to its one domain's quarantine; a recipient follows a quarantine
// digest's release link to its confirmation page and releases, and its view link to their own quarantine and lists;
// a tenant delists a blocked sender identity and sees its alert, another tenant cannot. With
// SLUICE_SCREENSHOTS=docs the main views are saved as docs/console-*.png (the README shows them).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { chromium, type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { consoleWorld, type ConsoleWorld } from '../helpers/console-world.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const HOUR = 3_600_000;
const shots = process.env.SLUICE_SCREENSHOTS ? path.resolve(process.env.SLUICE_SCREENSHOTS) : fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-shots-'));

if (!fs.existsSync(CHROMIUM)) {
  // CI installs chromium (.ci/run); a machine without it says so instead of passing silently.
  t.fail(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set SLUICE_TEST_CHROMIUM)`);
} else {
  let browser: Browser;
  t.before(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  t.teardown(() => browser?.close());

  /** A page in a browser context of its own (its own cookies), closed with the test. */
  async function newPage(t: Test): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    // A CSP violation (inline script or style) is reported on the console: each fails the test.
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    page.on('dialog', (d) => void d.accept());
    t.teardown(() => context.close());
    return page;
  }

  /** Signs in (landing on the overview, the console's home) and opens `open`. */
  async function signIn(t: Test, w: ConsoleWorld, secret: string, open = '/console/queue'): Promise<Page> {
    const page = await newPage(t);
    await page.goto(`${w.base}/console/queue`);
    t.equal(new URL(page.url()).pathname, '/console/login', 'redirected to sign-in');
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/overview');
    await page.goto(`${w.base}${open}`);
    return page;
  }

  t.test('tenant: retry a deferred delivery, release from quarantine, log search, no other tenant by URL', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    await w.send(w.acme, 'ann@later.test', 'Invoice 2026-11');
    await w.send(w.bravo, 'bob@later.test', 'bravo secret');
    await w.quarantine('carol@acme-corp.test', 'Cheap watches');
    await stack.worker.runOnce();
    const ann = await w.deliveryOf('ann@later.test');
    const bob = await w.deliveryOf('bob@later.test');
    t.equal(ann.state, 'queued');
    t.equal(ann.attempts, 1);

    const page = await signIn(t, w, w.acme.key);
    await page.selectOption('select[name=state]', 'deferred');
    await page.click('button:has-text("Filter")');
    t.match(await page.textContent('table'), /ann@later\.test/);
    t.notMatch(await page.textContent('main'), /bob@later|bravo secret/);
    if (process.env.SLUICE_SCREENSHOTS) await page.screenshot({ path: path.join(shots, 'console-queue.png'), fullPage: true });

    // Retry: due now, delivered on the worker's next pass, both attempts shown.
    await page.click(`a:text-is("${ann.id}")`);
    t.match(await page.textContent('main'), /4\.2\.0 mailbox busy/);
    w.state.deferring = false;
    stack.clock.advance(60_000);
    await page.click('button:has-text("Retry now")');
    t.match(await page.textContent('.flash'), /due now/);
    t.equal((await w.deliveryOf('ann@later.test')).next_attempt_at, stack.clock.now());
    await stack.worker.runOnce();
    await page.reload();
    t.match(await page.textContent('h1'), /delivered/);
    t.equal(await page.locator('h2:has-text("Attempts") + table tbody tr').count(), 2, 'both attempts listed');
    t.ok(w.sink.messages.some((m) => m.rcptTo.includes('ann@later.test')));

    // Another tenant's entry by editing the URL: 404, nothing of it shown.
    const other = await page.goto(`${w.base}/console/queue/${bob.id}`);
    t.equal(other?.status(), 404);
    t.match(await page.textContent('h1'), /Not found/);
    t.notMatch(await page.content(), /bob@later|bravo secret/);
    t.equal((await page.goto(`${w.base}/console/queue?account=bravo`))?.status(), 404);

    // Quarantine is the inbound key's: not linked for this api-key session, and 404 by URL.
    t.equal(await page.locator('nav a:has-text("Quarantine")').count(), 0);
    t.equal((await page.goto(`${w.base}/console/quarantine`))?.status(), 404);

    // Signed in with the inbound key: headers and verdicts, release, arrival at the downstream.
    const inbound = await signIn(t, w, w.acme.inboundKey, '/console/quarantine');
    await inbound.click('table tbody tr a');
    t.match(await inbound.textContent('pre'), /Subject: Cheap watches/);
    t.match(await inbound.textContent('main'), /abuse-policy-quarantine/);
    const before = w.sink.messages.length;
    await inbound.click('button:has-text("Release")');
    t.match(await inbound.textContent('.flash'), /Released/);
    t.match(await inbound.textContent('h1'), /released/);
    await stack.worker.runOnce();
    const arrived = w.sink.messages.slice(before).find((m) => m.rcptTo.includes('carol@acme-corp.test'));
    t.ok(arrived, 'the released message arrived downstream');
    t.match(arrived?.raw.toString() ?? '', /Subject: Cheap watches/);

    // Log search by recipient, with the 3-day default shown.
    await page.click('nav a:has-text("Log search")');
    await page.fill('input[name=rcpt]', 'ann@later.test');
    await page.click('button:has-text("Search")');
    t.match(await page.textContent('.notice'), /last 3 days/);
    const rows = await page.locator('table tbody tr').allTextContents();
    t.equal(rows.length, 1);
    t.match(rows[0], /ann@later\.test.*Invoice 2026-11.*Y.*250/);
  });

  t.test('domain admin: a login link signs in, once, to its one domain\'s quarantine, lists and recipients', async (t) => {
    const w = await consoleWorld(t);
    await w.quarantine('carol@acme-corp.test', 'Cheap watches');
    const link = (await w.stack.api('GET', '/inbound/v1/domains/acme-corp.test/login-link', { key: w.acme.inboundKey })).body.loginLink as string;
    const page = await newPage(t);
    await page.goto(link);
    t.match(await page.textContent('main'), /administrator of acme-corp\.test/);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/quarantine');
    t.match(await page.textContent('.who'), /admin of acme-corp\.test/);
    t.same(await page.locator('nav a').allTextContents(), ['Quarantine', 'Inbound domains', 'Recipients', 'Safelist & blocklist', 'Inbound log']);
    await page.click('table tbody tr a');
    await page.click('button:has-text("Release")');
    t.match(await page.textContent('.flash'), /Released/);
    t.equal((await page.goto(`${w.base}/console/queue`))?.status(), 404, 'nothing outside its domain');
    t.equal((await page.goto(link))?.status(), 403, 'the link works once');
    t.match(await page.textContent('main'), /already used/);
  });

  t.test('a quarantine digest\'s release link: a confirmation page, then its button releases without a sign-in', async (t) => {
    const w = await consoleWorld(t);
    await w.quarantine('carol@acme-corp.test', 'Cheap watches');
    w.stack.clock.advance(60_000);
    t.equal(await w.stack.digests.runOnce(), 1);
    while ((await w.stack.worker.runOnce()) > 0);
    const digest = w.sink.messages.find((m) => m.rcptTo.includes('carol@acme-corp.test'))!;
    const link = /Release: +(\S+)/.exec((await simpleParser(digest.raw)).text ?? '')![1]!;
    const page = await newPage(t);
    await page.goto(link);
    t.match(await page.textContent('main'), /Release this message\?[^]*Cheap watches[^]*Nothing happens until you press the button/);
    await page.click('button:has-text("Release")');
    t.match(await page.textContent('.flash'), /Released: the message is on its way to carol@acme-corp\.test/);
    while ((await w.stack.worker.runOnce()) > 0);
    t.equal(w.sink.messages.filter((m) => m.rcptTo.includes('carol@acme-corp.test') && /Subject: Cheap watches/.test(m.raw.toString())).length, 1, 'relayed');
  });

  t.test('a recipient: the digest\'s view link signs in to their own held mail and lists, nothing else', async (t) => {
    const w = await consoleWorld(t);
    await w.quarantine('carol@acme-corp.test', 'Cheap watches');
    await w.quarantine('dave@acme-corp.test', 'Dave only');
    w.stack.clock.advance(60_000);
    t.equal(await w.stack.digests.runOnce(), 2);
    while ((await w.stack.worker.runOnce()) > 0);
    const digest = w.sink.messages.find((m) => m.rcptTo.includes('carol@acme-corp.test'))!;
    const link = /See all your held mail, and your safelist and blocklist: +(\S+)/.exec((await simpleParser(digest.raw)).text ?? '')![1]!;
    const page = await newPage(t);
    await page.goto(link);
    t.match(await page.textContent('main'), /Sign in as carol@acme-corp\.test/);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/quarantine');
    t.match(await page.textContent('.who'), /carol@acme-corp\.test/);
    t.same(await page.locator('nav a').allTextContents(), ['Quarantine', 'Safelist & blocklist']);
    t.notMatch(await page.textContent('main'), /Dave only/);
    await page.click('table tbody tr a');
    await page.click('button:has-text("Release")');
    t.match(await page.textContent('.flash'), /on its way to your mailbox/);
    while ((await w.stack.worker.runOnce()) > 0);
    t.ok(w.sink.messages.some((m) => m.rcptTo.includes('carol@acme-corp.test') && /Subject: Cheap watches/.test(m.raw.toString())), 'relayed to her');
    await page.click('nav a:has-text("Safelist")');
    await page.fill('input[name=item]', 'friend@ok.test');
    await page.click('button:has-text("Add")');
    t.match(await page.textContent('.flash'), /Added/);
    t.match(await page.textContent('table'), /friend@ok\.test/);
    t.equal((await page.goto(`${w.base}/console/recipients`))?.status(), 404, 'nothing else');
  });

  t.test('operator: every account, the deliverability chart per campaign and sub-account', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    // A week of mail: two campaigns of acme, its sub-account's, bravo's; some deferred, some bounced.
    for (let day = 0; day < 7; day++) {
      for (let i = 0; i < 2 + (day % 3) * 2; i++) await w.send(w.acme, `user${day}-${i}@rcpt.test`, `News ${day}`, 'newsletter');
      await w.send(w.acme, `user${day}@bounce.test`, 'Receipt', 'receipts');
      if (day % 2 === 0) await w.send(w.acme, `user${day}@later.test`, 'Receipt', 'receipts');
      await w.send(w.shop, `buyer${day}@rcpt.test`, 'Your order', 'orders');
      await w.send(w.bravo, `b${day}@rcpt.test`, 'bravo news');
      // A tracked newsletter of the sub-account, opened (and on odd days clicked) the same day.
      await w.sendTracked(w.shop, `fan${day}@rcpt.test`, `Deals ${day}`, 'deals');
      await stack.worker.runOnce();
      await w.engage(`fan${day}@rcpt.test`, { click: day % 2 === 1 });
      stack.clock.advance(24 * HOUR);
    }
    const made = await stack.services.console.createToken('browser test', stack.clock.now());
    const page = await signIn(t, w, made.token);
    t.match(await page.textContent('header'), /Signed in as operator/);
    await page.goto(`${w.base}/console/queue?account=*&state=all&rcpt=b0@rcpt.test`);
    t.match(await page.textContent('table'), /b0@rcpt\.test/);
    await page.goto(`${w.base}/console/queue?account=*&state=all&rcpt=user0@bounce.test`);
    t.match(await page.textContent('table'), /user0@bounce\.test/);

    await page.goto(`${w.base}/console/deliverability?account=acme&days=7`);
    t.equal(await page.locator('svg polyline').count(), 6, 'sent, delivered, bounced, deferred, opens, clicks');
    // The chart's points carry the same numbers as the tables: sent per day, summed over the week.
    const points = await page.locator('svg circle title').allTextContents();
    const sum = (label: string) => points.filter((p) => p.startsWith(`${label} `)).reduce((n, p) => n + Number(p.split(': ')[1]), 0);
    t.equal(sum('Sent'), 45, 'the last 7 days (day 0 is out): 33 of acme and 12 of its sub-account');
    t.equal(sum('Bounced'), 7);
    t.ok(sum('Deferred') > 0);
    t.equal(sum('Opens'), 6, 'one open a day');
    t.equal(sum('Clicks'), 3, 'a click on days 1, 3 and 5');
    const byCampaign = await page.locator('h2:has-text("By campaign") + table tbody tr').allTextContents();
    t.match(byCampaign.join('\n'), /newsletter/);
    t.match(byCampaign.join('\n'), /orders/, 'the parent includes its sub-account');
    t.ok(byCampaign.includes('deals660063'), 'deals: sent, delivered, bounced, deferred, opens, clicks');
    const bySub = await page.locator('h2:has-text("By sub-account") + table tbody tr').allTextContents();
    t.same(bySub.map((r) => r.split(/\d/)[0]), ['acmeshop']);
    t.notMatch(await page.textContent('main'), /bravo/);
    if (process.env.SLUICE_SCREENSHOTS) await page.screenshot({ path: path.join(shots, 'console-deliverability.png'), fullPage: true });

    await page.selectOption('select[name=campaign]', 'receipts');
    await page.click('button:has-text("Show")');
    const receipts = await page.locator('h2:has-text("By campaign") + table tbody tr').allTextContents();
    t.equal(receipts.length, 1);
    t.match(receipts[0], /^receipts/);

    // The sub-account alone: its own campaigns, no sub-account table.
    await page.goto(`${w.base}/console/deliverability?account=acmeshop&days=7`);
    t.same((await page.locator('h2:has-text("By campaign") + table tbody tr').allTextContents()).map((r) => r.split(/\d/)[0]).sort(), ['deals', 'orders']);
    t.equal(await page.locator('h2:has-text("By sub-account")').count(), 0);

    // The other views render for the operator too.
    for (const view of ['quarantine', 'log', 'domains', 'dkim', 'webhooks', 'senders']) {
      const res = await page.goto(`${w.base}/console/${view}?account=acme`);
      t.equal(res?.status(), 200, view);
    }
    await page.goto(`${w.base}/console/dkim?account=acme`);
    await page.fill('input[name=domain]', 'sender.test');
    await page.fill('input[name=selector]', 's1');
    await page.selectOption('select[name=key_length]', '1024');
    await page.click('button:has-text("Create key")');
    t.match(await page.textContent('.flash'), /Key created/);
    t.match(await page.textContent('table'), /s1\._domainkey\.sender\.test/);
    await page.fill('input[name=new_selector]', 's2');
    await page.click('button:has-text("Rotate")');
    t.match(await page.textContent('table'), /s2\._domainkey\.sender\.test[\s\S]*rotated/);
    if (process.env.SLUICE_SCREENSHOTS) {
      await page.goto(`${w.base}/console/queue?account=*&state=all`);
      await page.screenshot({ path: path.join(shots, 'console-operator-queue.png') });
    }
  });

  t.test('sender blocks and alerts: the tenant delists its blocked identity; another tenant cannot', async (t) => {
    const w = await consoleWorld(t, { SLUICE_ABUSE_BLOCK_CONFIRMED: '2' });
    const { stack } = w;
    const monitor = await stack.api('POST', '/tx/v1/monitors', {
      key: w.acme.key,
      body: { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'email', email: 'ops@rcpt.test' },
    });
    t.equal(monitor.status, 201);
    t.equal(await w.sendSpam(w.acme), 403);
    t.equal(await w.sendSpam(w.acme), 403);
    const ID = 'acme|x-authuser|app@sender.test';
    const active = async () => (await stack.sql<{ n: number }>('SELECT count(*) AS n FROM sender_blocks WHERE sender_id = ? AND lifted_at IS NULL', ID))[0]!.n;
    t.equal(await active(), 1);

    // bravo, in its own browser session: sees nothing of acme's; a form forged with acme's identity changes nothing.
    const intruder = await signIn(t, w, w.bravo.key);
    await intruder.click('nav a:has-text("Sender blocks")');
    t.match(await intruder.textContent('main'), /No sender identity is blocked/);
    t.notMatch(await intruder.textContent('main'), /app@sender\.test/);
    t.equal((await intruder.goto(`${w.base}/console/senders?account=acme`))?.status(), 404);
    await intruder.goto(`${w.base}/console/senders`);
    // Posted with the browser context's own cookie and a valid CSRF token of bravo's session.
    const csrf = await intruder.inputValue('input[name=_csrf] >> nth=0');
    const post = (url: string) => intruder.context().request.post(url, { form: { _csrf: csrf, sender_id: ID }, maxRedirects: 0 }).then((r) => r.status());
    const forged = [await post(`${w.base}/console/senders/delist?account=acme`), await post(`${w.base}/console/senders/delist`)];
    t.same(forged, [404, 404], 'naming acme, or acme\'s identity as bravo');
    t.equal(await active(), 1, 'still blocked');

    const page = await signIn(t, w, w.acme.key);
    await page.click('nav a:has-text("Sender blocks")');
    t.match(await page.textContent('main'), /acme\|x-authuser\|app@sender\.test/);
    t.match(await page.textContent('h2:has-text("Alerts fired") + table'), /Sender ID is blocked.*acme\|x-authuser\|app@sender\.test/);
    if (process.env.SLUICE_SCREENSHOTS) await page.screenshot({ path: path.join(shots, 'console-senders.png'), fullPage: true });
    await page.click('button:has-text("Delist")');
    t.match(await page.textContent('.flash'), /Delisted/);
    t.match(await page.textContent('main'), /No sender identity is blocked/);
    t.equal(await active(), 0);
    t.equal(await w.sendSpam(w.acme), 403, 'the next GTUBE is refused as spam, not as blocked');
  });
}
