// Drives console sign-in's second factor in a real browser (Debian's chromium through playwright-core): a tenant
// enrolled with `sluice console totp enroll` is refused with a wrong code and signs in with the right one; then a
// change it makes with a form shows in its Audit view as made through the console with its key.
import fs from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { base32Decode, hotp, stepOf } from '../../control-api/console/totp.js';
import { cliIn } from '../helpers/cli-in.js';
import { startStack } from '../helpers/stack.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';

if (!fs.existsSync(CHROMIUM)) {
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

  async function newPage(t: Test): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    t.teardown(() => context.close());
    return page;
  }

  t.test('enrol, a wrong code refused, the right code signs in, a form change in the Audit view', async (t) => {
    const stack = await startStack(t);
    const acme = await stack.createAccount('acme');
    const base = `http://127.0.0.1:${stack.http.port}`;
    const enrolled = await cliIn(stack.env, 'console', 'totp', 'enroll', '--account', 'acme', '--json');
    t.equal(enrolled.code, 0, enrolled.err);
    const key = base32Decode((JSON.parse(enrolled.out) as { secret: string }).secret);
    const right = hotp(key, stepOf(stack.clock.now()));
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');

    const page = await newPage(t);
    await page.goto(`${base}/console/dkim`);
    t.equal(new URL(page.url()).pathname, '/console/login');
    await page.fill('input[name=secret]', acme.key);
    await page.fill('input[name=code]', wrong);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/login', 'still at sign-in');
    t.match(await page.textContent('.error'), /wrong or used code/);

    await page.fill('input[name=secret]', acme.key);
    await page.fill('input[name=code]', right);
    await page.click('button:has-text("Sign in")');
    t.not(new URL(page.url()).pathname, '/console/login', 'signed in');
    t.match(await page.textContent('header'), /tenant acme/);

    await page.goto(`${base}/console/dkim`);
    await page.fill('input[name=domain]', 'acme.test');
    await page.fill('input[name=selector]', 'web1');
    await page.click('form[action^="/console/dkim/create"] button');
    t.match(await page.textContent('main'), /web1/);
    await page.click('nav a:text-is("Audit")');
    t.equal(new URL(page.url()).pathname, '/console/audit');
    const row = await page.textContent('table tbody tr:first-child');
    t.match(row, /console/);
    t.match(row, /POST \/tx\/v1\/domains\/\{domain\}\/dkim-keys/);
    t.match(row, /domain=acme\.test/);
    t.match(row, /201/);
  });
}
