// Drives the web console in a real browser (Debian's chromium through playwright-core): a tenant signs in, retries a
// deferred delivery and sees it delivered, releases a quarantined message and sees it arrive downstream, finds a
// message by recipient in the log search, and cannot open another tenant's queue entry by editing the URL; the
// operator signs in with a `sluice console token` and sees every account and the deliverability chart. With
// SLUICE_SCREENSHOTS=docs the main views are saved as docs/console-*.png (the README shows them).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

  async function signIn(t: Test, w: ConsoleWorld, secret: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    // A CSP violation (inline script or style) is reported on the console: each fails the test.
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    page.on('dialog', (d) => void d.accept());
    t.teardown(() => context.close());
    await page.goto(`${w.base}/console/queue`);
    t.equal(new URL(page.url()).pathname, '/console/login', 'redirected to sign-in');
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/queue');
    return page;
  }

  t.test('tenant: retry a deferred delivery, release from quarantine, log search, no other tenant by URL', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    await w.send(w.acme, 'ann@later.test', 'Invoice 2026-11');
    await w.send(w.bravo, 'bob@later.test', 'bravo secret');
    await w.quarantine('carol@acme-corp.test', 'Cheap watches');
    await stack.worker.runOnce();
    const ann = w.deliveryOf('ann@later.test');
    const bob = w.deliveryOf('bob@later.test');
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
    t.equal(w.deliveryOf('ann@later.test').next_attempt_at, stack.clock.now());
    await stack.worker.runOnce();
    await page.reload();
    t.match(await page.textContent('h1'), /delivered/);
    t.equal(await page.locator('table tbody tr').count(), 2, 'both attempts listed');
    t.ok(w.sink.messages.some((m) => m.rcptTo.includes('ann@later.test')));

    // Another tenant's entry by editing the URL: 404, nothing of it shown.
    const other = await page.goto(`${w.base}/console/queue/${bob.id}`);
    t.equal(other?.status(), 404);
    t.match(await page.textContent('h1'), /Not found/);
    t.notMatch(await page.content(), /bob@later|bravo secret/);
    t.equal((await page.goto(`${w.base}/console/queue?account=bravo`))?.status(), 404);

    // Quarantine: headers and verdicts, release, arrival at the downstream.
    await page.goto(`${w.base}/console/quarantine`);
    await page.click('table tbody tr a');
    t.match(await page.textContent('pre'), /Subject: Cheap watches/);
    t.match(await page.textContent('main'), /abuse-policy-quarantine/);
    const before = w.sink.messages.length;
    await page.click('button:has-text("Release")');
    t.match(await page.textContent('.flash'), /Released/);
    t.match(await page.textContent('h1'), /released/);
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
      await stack.worker.runOnce();
      stack.clock.advance(24 * HOUR);
    }
    const made = stack.services.console.createToken('browser test', stack.clock.now());
    const page = await signIn(t, w, made.token);
    t.match(await page.textContent('header'), /Signed in as operator/);
    await page.goto(`${w.base}/console/queue?account=*&state=all`);
    const all = await page.textContent('table');
    t.match(all, /b0@rcpt\.test/);
    t.match(all, /user0@bounce\.test/);

    await page.goto(`${w.base}/console/deliverability?account=acme&days=7`);
    t.equal(await page.locator('svg polyline').count(), 4, 'sent, delivered, bounced, deferred');
    // The chart's points carry the same numbers as the tables: sent per day, summed over the week.
    const points = await page.locator('svg circle title').allTextContents();
    const sum = (label: string) => points.filter((p) => p.startsWith(`${label} `)).reduce((n, p) => n + Number(p.split(': ')[1]), 0);
    t.equal(sum('Sent'), 39, '33 of acme and 6 of its sub-account');
    t.equal(sum('Bounced'), 7);
    t.ok(sum('Deferred') > 0);
    const byCampaign = await page.locator('h2:has-text("By campaign") + table tbody tr').allTextContents();
    t.match(byCampaign.join('\n'), /newsletter/);
    t.match(byCampaign.join('\n'), /orders/, 'the parent includes its sub-account');
    const byAccount = await page.locator('h2:has-text("By account") + table tbody tr').allTextContents();
    t.same(byAccount.map((r) => r.split(/\d/)[0]).sort(), ['acme', 'acmeshop']);
    t.notMatch(await page.textContent('main'), /bravo/);
    if (process.env.SLUICE_SCREENSHOTS) await page.screenshot({ path: path.join(shots, 'console-deliverability.png'), fullPage: true });

    await page.selectOption('select[name=campaign]', 'receipts');
    await page.click('button:has-text("Show")');
    const receipts = await page.locator('h2:has-text("By campaign") + table tbody tr').allTextContents();
    t.equal(receipts.length, 1);
    t.match(receipts[0], /^receipts/);

    // The sub-account alone.
    await page.goto(`${w.base}/console/deliverability?account=acmeshop&days=7`);
    t.same((await page.locator('h2:has-text("By account") + table tbody tr').allTextContents()).map((r) => r.split(/\d/)[0]), ['acmeshop']);

    // The other views render for the operator too.
    for (const view of ['quarantine', 'log', 'domains', 'dkim', 'webhooks']) {
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
}
