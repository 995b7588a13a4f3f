// Owns the README's console screenshots: starts a server with sample data (two tenants, a sub-account, a week of
// sent, delivered, bounced and deferred mail, quarantined spam, a refusal, an error line) and saves the overview, the
// queue, the quarantine and the deliverability view as docs/console-*.png (1200 px wide, 800 high but the whole
// overview) with chromium. Not a test (no .test. in its name, so tap does not run it):
// `npx tsc -p tsconfig.test.json && node dist/test/helpers/console-shots.js` (SLUICE_SHOTS_DIR=<dir> to write elsewhere).
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { chromium, type Page } from 'playwright-core';
import t from 'tap';
import { consoleWorld } from './console-world.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const OUT = path.resolve(process.env.SLUICE_SHOTS_DIR ?? path.join(import.meta.dirname, '../../../docs'));
const HOUR = 3_600_000;
const VIEWPORT = { width: 1200, height: 800 };

t.test('console screenshots', async (t) => {
  const w = await consoleWorld(t, {}, 'sqlite', pino({ level: 'info' }, new Writable({ write: (_c, _e, done) => done() })));
  const { stack } = w;
  // A week of mail: newsletters and receipts of acme, orders of its shop, some bounced, some deferred.
  for (let d = 0; d < 7; d++) {
    for (let i = 0; i < 3 + (d % 3); i++) await w.send(w.acme, `reader${d}-${i}@rcpt.test`, `Newsletter week ${d}`, 'newsletter');
    await w.send(w.acme, `old${d}@bounce.test`, 'Receipt', 'receipts');
    await w.send(w.shop, `buyer${d}@rcpt.test`, `Your order #10${d}4`, 'orders');
    await w.send(w.bravo, `b${d}@rcpt.test`, 'Bravo news');
    await stack.worker.runOnce();
    stack.clock.advance(24 * HOUR);
  }
  await w.send(w.acme, 'ann@later.test', 'Invoice 2026-11');
  await w.send(w.acme, 'ben@later.test', 'Password reset');
  await w.send(w.bravo, 'bob@later.test', 'Bravo invoice');
  await w.quarantine('carol@acme-corp.test', 'Cheap watches');
  await w.quarantine('dan@acme-corp.test', 'You have won');
  await w.quarantine('dave@bravo-corp.test', 'Urgent transfer');
  const mx = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.spam.test' });
  await mx.sendMail({ envelope: { from: 'x@spam.test', to: ['nobody@elsewhere.test'] }, raw: 'Subject: x\r\n\r\nx\r\n' }).catch(() => undefined);
  mx.close();
  await stack.worker.runOnce();
  stack.clock.advance(47 * 60_000);
  stack.services.logger.child({ component: 'webhooks' }).error({ err: new Error('connect ECONNREFUSED 192.0.2.9:443') }, 'webhook batch failed; retried later');

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  t.teardown(() => browser.close());
  const signIn = async (secret: string): Promise<Page> => {
    const page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await page.goto(`${w.base}/console/login`);
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    return page;
  };
  fs.mkdirSync(OUT, { recursive: true });
  const shot = async (page: Page, url: string, name: string, fullPage = false) => {
    await page.goto(`${w.base}${url}`);
    await page.screenshot({ path: path.join(OUT, `console-${name}.png`), fullPage });
    t.pass(`${name}: ${path.join(OUT, `console-${name}.png`)}`);
  };
  const operator = await signIn((await stack.services.console.createToken('screenshots', stack.clock.now())).token);
  // The whole overview: the machine's part (listeners, storage, certificates, errors) is below the fold.
  await shot(operator, '/console/overview', 'overview', true);
  await shot(operator, '/console/queue?account=*', 'queue');
  await shot(operator, '/console/deliverability?account=acme&days=7', 'deliverability');
  const inbound = await signIn(w.acme.inboundKey);
  // One held message: its facts, its verdicts as a table, its headers.
  await inbound.goto(`${w.base}/console/quarantine`);
  await inbound.click('td a:text-is("1")');
  await inbound.screenshot({ path: path.join(OUT, 'console-quarantine.png') });
  t.pass(`quarantine: ${path.join(OUT, 'console-quarantine.png')}`);
});
