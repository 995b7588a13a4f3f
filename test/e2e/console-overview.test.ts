// Drives the console's overview and the views it reworked in a real browser (Debian's chromium through
// playwright-core): the operator lands on the overview and sees the queue, quarantine and today's verdicts of every
// account, the version, listeners with their TLS, storage, certificate expiry and the last error lines (an SMTP
// listener's among them); a tenant's key sees its own account's figures of its key's scope and nothing of the
// machine; the queue shows subject, age, next attempt and a deferred state; a verdict is a table, not JSON; every
// date reads yyyy-mm-dd (hh:mm UTC); the deliverability view leads with counts and rates.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { VERSION } from '../../bin/version.js';
import { consoleWorld, type ConsoleWorld } from '../helpers/console-world.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const HOUR = 3_600_000;
/** `2026-12-02 18:25 UTC`: the console's one time format (control-api/console/dates.ts). */
const STAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/;
/** What no page may show any more: ISO 8601 with a T, or seconds with a Z. */
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}|\d{2}:\d{2}:\d{2}(\.\d+)?Z/;

/** A scene: acme and bravo each with a deferred delivery and a quarantined message, a refusal at RCPT, an error logged. */
async function scene(t: Test): Promise<ConsoleWorld> {
  // The stack logs at info to nowhere: error lines are then kept for the overview, as in production.
  const w = await consoleWorld(t, {}, 'sqlite', pino({ level: 'info' }, new Writable({ write: (_c, _e, done) => done() })));
  await w.send(w.acme, 'ann@later.test', 'Invoice 2026-11');
  await w.send(w.bravo, 'bob@later.test', 'bravo secret');
  await w.quarantine('carol@acme-corp.test', 'Cheap watches');
  await w.quarantine('dave@bravo-corp.test', 'Bravo watches');
  // A recipient of no served domain: refused at RCPT (relay denied), a row of no account.
  const mx = nodemailer.createTransport({ host: w.stack.mx.host, port: w.stack.mx.port, secure: false, ignoreTLS: true, name: 'client.spam.test' });
  await t.rejects(mx.sendMail({ envelope: { from: 'x@spam.test', to: ['nobody@elsewhere.test'] }, raw: 'Subject: x\r\n\r\nx\r\n' }));
  mx.close();
  await w.stack.worker.runOnce();
  w.stack.clock.advance(2 * HOUR + 5 * 60_000);
  // A part of the server logs an error (through the logger the core is wired with).
  w.stack.services.logger.child({ component: 'webhooks' }).error({ err: new Error('connect ECONNREFUSED 192.0.2.9:443') }, 'webhook batch failed');
  return w;
}

if (!fs.existsSync(CHROMIUM)) {
  t.fail(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set SLUICE_TEST_CHROMIUM)`);
} else {
  let browser: Browser;
  t.before(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  });
  t.teardown(() => browser?.close());

  async function signIn(t: Test, w: ConsoleWorld, secret: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    t.teardown(() => context.close());
    await page.goto(`${w.base}/console`);
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    t.equal(new URL(page.url()).pathname, '/console/overview', 'the overview is the console\'s home');
    return page;
  }
  const figure = async (page: Page, id: string) => (await page.textContent(`[data-figure="${id}"] .figure`))?.trim();
  const verdictRow = async (page: Page, v: string) => (await page.locator(`tr:has([data-verdict="${v}"]) td`).allTextContents()).slice(1);
  const headings = (page: Page) => page.locator('main h2').allTextContents();
  /** The cells of the column headed `name` in the first table under `scope`. */
  async function column(page: Page, name: string, scope = 'main'): Promise<string[]> {
    const heads = await page.locator(`${scope} table >> nth=0 >> thead th`).allTextContents();
    const i = heads.indexOf(name);
    if (i < 0) throw new Error(`no column ${name} in ${heads.join(', ')}`);
    return page.locator(`${scope} table >> nth=0 >> tbody tr td:nth-child(${i + 1})`).allTextContents();
  }

  t.test('operator: every account\'s figures and the machine: version, listeners, storage, certificates, last errors', async (t) => {
    const w = await scene(t);
    // An SMTP listener's error: data_dir/tmp made a file, a message too big to stay in memory cannot spill to its
    // scratch, so the MX answers DATA 451 4.3.0 and logs an error line — through the logger bin/server.ts hands the
    // listeners (the core's, which keeps its error lines for the overview).
    const tmp = path.join(w.stack.dataDir, 'tmp');
    await fsp.rm(tmp, { recursive: true, force: true });
    await fsp.writeFile(tmp, '');
    const mx = nodemailer.createTransport({ host: w.stack.mx.host, port: w.stack.mx.port, secure: false, ignoreTLS: true, name: 'client.big.test' });
    const big = `Subject: big\r\n\r\n${`${'x'.repeat(998)}\r\n`.repeat(400)}`;
    const refused = await mx.sendMail({ envelope: { from: 'x@big.test', to: ['carol@acme-corp.test'] }, raw: big }).then(() => undefined, (err: { responseCode?: number; response?: string }) => err);
    t.equal(refused?.responseCode, 451, refused?.response ?? 'accepted');
    t.match(refused?.response, /^451 4\.3\.0 /);
    mx.close();
    await fsp.rm(tmp);
    const page = await signIn(t, w, (await w.stack.services.console.createToken('ops', w.stack.clock.now())).token);
    t.same(await headings(page), ['Queue', 'Inbound', 'This server']);
    t.equal(await figure(page, 'waiting'), '2');
    t.equal(await figure(page, 'deferred'), '2', 'acme\'s and bravo\'s');
    t.equal(await figure(page, 'oldest'), '2 h 5 min');
    t.equal(await figure(page, 'quarantined'), '2');
    t.same(await verdictRow(page, 'quarantined'), ['2', '66.7 %']);
    t.same(await verdictRow(page, 'refused'), ['1', '33.3 %'], 'the relay-denied recipient of no account too');
    t.same(await verdictRow(page, 'relayed'), ['0', '0.0 %']);

    t.equal(await page.textContent('[data-fact="version"]'), `Sluice ${VERSION}`);
    const listeners = await page.locator('h3:has-text("Listeners") + table tbody tr').allTextContents();
    const row = (name: string) => listeners.find((r) => r.startsWith(name)) ?? '';
    t.match(row('mx'), /^mxmx: inbound mail127\.0\.0\.1:0 \(a free port picked at start\)STARTTLS offered \(RFC 3207\)listening$/);
    t.match(row('submission'), /STARTTLS; AUTH needs it.*listening/);
    t.match(row('http'), /plain HTTP.*listening/);
    t.match(await page.textContent('[data-fact="backend"]'), /^SQLite \(/);
    t.match(await page.textContent('[data-fact="size"]'), /^\d+\.\d (KiB|MiB)$/);
    t.match(await page.textContent('[data-fact="writes"]'), /no failure/);
    const cert = await page.locator('h3:has-text("Certificates") + table tbody tr td').allTextContents();
    t.match(cert[0], /SMTP/);
    t.match(cert[3], /^\d{4}-\d{2}-\d{2}$/, 'expiry as yyyy-mm-dd');
    const left = Number(await page.getAttribute('[data-days-left]', 'data-days-left'));
    t.ok(left > 300, `days left counted from the expiry (${left})`);
    const errors = page.locator('h3:has-text("Last errors") + table tbody tr');
    t.equal(await errors.count(), 2, 'the listener\'s line and the webhooks\' line');
    // Newest first: the MX session's error, then the one the scene logged.
    t.match(await errors.nth(0).locator('td').allTextContents(), [STAMP, 'error', 'mx', 'DATA could not be written to scratch', /EEXIST/]);
    t.match(await errors.nth(1).locator('td').allTextContents(), [STAMP, 'error', 'webhooks', 'webhook batch failed', 'connect ECONNREFUSED 192.0.2.9:443']);
    t.notMatch(await page.textContent('main'), ISO);

    // One account picked: its figures; the machine is still the operator's to see.
    await page.goto(`${w.base}/console/overview?account=acme`);
    t.equal(await figure(page, 'deferred'), '1');
    t.equal(await figure(page, 'quarantined'), '1');
    t.same(await verdictRow(page, 'refused'), ['0', '0.0 %']);
    t.same(await headings(page), ['Queue', 'Inbound', 'This server']);
  });

  t.test('tenant: its own account\'s figures of its key\'s scope, nothing of the machine', async (t) => {
    const w = await scene(t);
    const machine = /This server|Listeners|Certificates|Last errors|Storage|ECONNREFUSED|Sluice \d/;
    const api = await signIn(t, w, w.acme.key);
    t.same(await headings(api), ['Queue'], 'an api key: the queue only');
    t.equal(await figure(api, 'deferred'), '1', 'acme\'s only');
    t.equal(await figure(api, 'waiting'), '1');
    t.notMatch(await api.textContent('main'), machine);

    const inbound = await signIn(t, w, w.acme.inboundKey);
    t.same(await headings(inbound), ['Inbound'], 'an inbound key: quarantine and verdicts only');
    t.equal(await figure(inbound, 'quarantined'), '1');
    t.same(await verdictRow(inbound, 'quarantined'), ['1', '100.0 %']);
    t.same(await verdictRow(inbound, 'refused'), ['0', '0.0 %'], 'not the refusal of no account');
    t.notMatch(await inbound.textContent('main'), machine);

    const shop = await signIn(t, w, w.shop.key);
    t.equal(await figure(shop, 'waiting'), '0', 'a sub-account: not its parent\'s mail');
    const other = await shop.goto(`${w.base}/console/overview?account=acme`);
    t.equal(other?.status(), 404, 'another account by URL: 404');
    t.equal((await api.goto(`${w.base}/console/overview?account=*`))?.status(), 404, 'every account at once: the operator only');
  });

  t.test('queue, verdicts, dates and deliverability: subject, age, next attempt, deferred; a verdict table; rates', async (t) => {
    const w = await scene(t);
    const page = await signIn(t, w, w.acme.key);
    await page.goto(`${w.base}/console/queue`);
    t.same(await column(page, 'State'), ['deferred']);
    t.equal(await page.locator('td .state-deferred').count(), 1, 'shown in the deferred colour');
    t.same(await column(page, 'Subject'), ['Invoice 2026-11']);
    t.same(await column(page, 'Age'), ['2 h 5 min']);
    t.match(await column(page, 'Next attempt'), [STAMP]);
    await page.selectOption('select[name=state]', 'deferred');
    await page.click('button:has-text("Filter")');
    t.same(await column(page, 'To'), ['ann@later.test'], 'the deferred filter');
    await page.click('td a');
    t.match(await page.textContent('h1'), /deferred/);
    t.match(await column(page, 'At'), [STAMP]);
    t.notMatch(await page.textContent('main'), ISO);

    const inbound = await signIn(t, w, w.acme.inboundKey);
    await inbound.goto(`${w.base}/console/quarantine`);
    t.match(await column(inbound, 'Received'), [STAMP]);
    await inbound.click('td a');
    const verdicts = 'h2:has-text("Verdicts") + table';
    t.same(await inbound.locator(`${verdicts} thead th`).allTextContents(), ['Step', 'Verdict', 'Reason', 'Score', 'Details']);
    const steps = await inbound.locator(`${verdicts} tbody tr td:first-child`).allTextContents();
    t.ok(steps.includes('spam') && steps.includes('policy'), `one row per step (${steps.join(', ')})`);
    const spam = await inbound.locator(`${verdicts} tbody tr:has(td:first-child:text-is("spam")) td`).allTextContents();
    t.equal(spam[1], 'spam');
    t.match(spam[4], /threshold: \d/, 'the step\'s other facts as labelled lines');
    t.notMatch(await inbound.textContent('main'), /[{}]|"step"/, 'no JSON');
    t.notMatch(await inbound.textContent('main'), ISO);
    t.match(await inbound.textContent('dl'), /Received\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);

    // Deliverability: two delivered, one bounced over four recipients sent; ann's retry (due after 2 h) deferred
    // again: two deferrals.
    await w.send(w.acme, 'one@rcpt.test', 'hello');
    await w.send(w.acme, 'two@rcpt.test', 'hello');
    await w.send(w.acme, 'gone@bounce.test', 'hello');
    await w.stack.worker.runOnce();
    await page.goto(`${w.base}/console/deliverability?days=1`);
    t.equal(await figure(page, 'sent'), '4');
    t.equal(await figure(page, 'delivered'), '2');
    t.equal(await page.textContent('[data-rate="delivered"]'), '50.0 %');
    t.equal(await page.textContent('[data-rate="bounced"]'), '25.0 %');
    t.equal(await page.textContent('[data-rate="deferred"]'), '50.0 %');
    t.equal(await page.textContent('[data-rate="complained"]'), '0.0 %', 'complaints per delivered');
    await page.goto(`${w.base}/console/log`);
    const accepted = await column(page, 'Accepted');
    t.ok(accepted.length >= 4 && accepted.every((a) => STAMP.test(a)), `log rows dated yyyy-mm-dd hh:mm UTC (${accepted.join(' | ')})`);
    t.notMatch(await page.textContent('main'), ISO);
  });
}
