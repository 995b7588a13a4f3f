// Drives the console's managing forms in chromium (playwright-core): inbound domains (provision with downstream
// servers, policy, servers, domain lists, delete), webhooks (enrol, validate, delete) and alert monitors (create,
// edit, delete). Each form's change is read back through the REST API; a private target is refused until the operator
// allows it (security.allow_private_targets), and the route's refusal is shown on the form's page; a post without or
// with a wrong CSRF token is refused (403) per form; a key of the wrong scope, another tenant and a domain admin
// cannot (404), and nothing changes. With SLUICE_SCREENSHOTS=docs the three views are saved as docs/console-*.png.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import type { Config } from '../../config/load.js';
import { consoleWorld, type ConsoleWorld } from '../helpers/console-world.js';
import { LOOPBACK_ALLOWED } from '../helpers/stack.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = process.env.SLUICE_SCREENSHOTS ? path.resolve(process.env.SLUICE_SCREENSHOTS) : undefined;
/** Saves the page for the README when SLUICE_SCREENSHOTS names a directory. */
async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: true });
}

/** Opens or closes the outbound-connection policy for the loopback, as an operator's reload does. */
function privateTargets(w: ConsoleWorld, allowed: boolean): Promise<unknown> {
  return w.stack.reload({ ...w.stack.currentConfig(), security: { allowPrivateTargets: allowed ? LOOPBACK_ALLOWED.split(',') : [] } } as Config);
}

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
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    page.on('dialog', (d) => void d.accept());
    t.teardown(() => context.close());
    return page;
  }

  async function signIn(t: Test, w: ConsoleWorld, secret: string): Promise<Page> {
    const page = await newPage(t);
    await page.goto(`${w.base}/console/login`);
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    return page;
  }

  /** Clicks a form's button: the status of the POST itself (302 on success, the route's status on a refusal). */
  async function submit(page: Page, button: string): Promise<number> {
    const posted = page.waitForResponse((r) => r.request().method() === 'POST');
    const navigated = page.waitForEvent('framenavigated', (f) => f === page.mainFrame());
    await page.click(button);
    const [res] = await Promise.all([posted, navigated]);
    await page.waitForLoadState('domcontentloaded');
    return res.status();
  }

  /** A post from the page's own browser context (its session cookie): with no CSRF token, a wrong one, or `csrf`. */
  async function forged(page: Page, url: string, fields: Record<string, string>, csrf?: string): Promise<number> {
    const form = csrf === undefined ? fields : { ...fields, _csrf: csrf };
    return (await page.context().request.post(url, { form, maxRedirects: 0 })).status();
  }
  const csrfOf = (page: Page) => page.inputValue('input[name=_csrf] >> nth=0');

  /** Each path, posted without a CSRF token and with a wrong one: 403 both times. */
  async function refusedWithoutCsrf(t: Test, page: Page, paths: Record<string, Record<string, string>>): Promise<void> {
    for (const [path, fields] of Object.entries(paths)) {
      t.equal(await forged(page, path, fields), 403, `${path}: no CSRF token`);
      t.equal(await forged(page, path, fields, 'x'.repeat(43)), 403, `${path}: a wrong CSRF token`);
    }
  }

  t.test('inbound domains: provision with servers, policy, servers, lists, delete; refusals shown; scope held', async (t) => {
    const w = await consoleWorld(t);
    const { stack, sink } = w;
    const key = w.acme.inboundKey;
    const domainOf = async (name: string) => (await stack.api('GET', `/inbound/v1/domains?domains=${name}`, { key })).body.domains[0];
    const page = await signIn(t, w, key);
    await page.click('nav a:has-text("Inbound domains")');

    // A downstream on the loopback while the operator has not allowed it: the route's refusal, on the page, refilled.
    await privateTargets(w, false);
    const create = 'form[action*="/domains/create"]';
    await page.fill(`${create} input[name=domain]`, 'new-corp.test');
    await page.fill(`${create} input[name=ds_target] >> nth=0`, '127.0.0.1');
    await page.fill(`${create} input[name=ds_port] >> nth=0`, String(sink.port));
    await page.fill(`${create} input[name=ds_weight] >> nth=0`, '5');
    t.equal(await submit(page, 'button:has-text("Add domain")'), 400);
    t.match(await page.textContent('[role=alert]'), /downstreamAddresses\[0\]\.target: .*127\.0\.0\.1.*security\.allow_private_targets/);
    t.equal(await page.inputValue(`${create} input[name=domain]`), 'new-corp.test', 'the form keeps what was typed');
    t.equal(await domainOf('new-corp.test'), undefined, 'nothing provisioned');

    // Allowed: another customer's domain is the route's 409, on the page; a new one is provisioned with its server.
    await privateTargets(w, true);
    await page.fill(`${create} input[name=domain]`, 'bravo-corp.test');
    t.equal(await submit(page, 'button:has-text("Add domain")'), 409);
    t.match(await page.textContent('[role=alert]'), /domain "bravo-corp\.test" is already provisioned by another customer/);
    await page.fill(`${create} input[name=domain]`, 'new-corp.test');
    t.equal(await submit(page, 'button:has-text("Add domain")'), 302);
    t.equal(new URL(page.url()).pathname, '/console/domains/new-corp.test');
    t.match(await page.textContent('.flash'), /Domain provisioned/);
    t.match(await domainOf('new-corp.test'), { subscriptionHandle: 'default', downstreamAddresses: [{ target: '127.0.0.1', port: sink.port, priority: 10, weight: 5 }] });

    // Downstream servers: a second one; then a port the route refuses in its words, nothing changed.
    await page.fill('input[name=ds_target] >> nth=1', '127.0.0.2');
    await page.fill('input[name=ds_port] >> nth=1', String(sink.port));
    await page.fill('input[name=ds_priority] >> nth=1', '20');
    t.equal(await submit(page, 'button:has-text("Save servers")'), 302);
    t.match(await page.textContent('.flash'), /Downstream servers saved/);
    t.same((await domainOf('new-corp.test')).downstreamAddresses.map((d: { target: string; priority: number; weight: number }) => [d.target, d.priority, d.weight]), [['127.0.0.1', 10, 5], ['127.0.0.2', 20, 1]]);
    await page.fill('input[name=ds_port] >> nth=1', 'smtp');
    t.equal(await submit(page, 'button:has-text("Save servers")'), 400);
    t.match(await page.textContent('[role=alert]'), /records.*1.*port.*must be an integer from 1 to 65535/);
    t.equal(await page.inputValue('input[name=ds_port] >> nth=1'), 'smtp', 'the rows keep what was typed');
    t.equal((await domainOf('new-corp.test')).downstreamAddresses.length, 2);

    // Policy: abuse policy, override, spam header, admins and an alias; a reserved header name is refused.
    const settings = 'form[action*="/settings"]';
    await page.selectOption(`${settings} select[name=abusePolicy]`, 'flag');
    await page.check(`${settings} input[name=abusePolicyOverride]`);
    await page.fill(`${settings} input[name=spamHeaderName]`, 'X-Corp-Spam');
    await page.fill(`${settings} input[name=spamHeaderValue]`, 'yes');
    await page.fill(`${settings} textarea[name=admins]`, 'boss@new-corp.test');
    await page.fill(`${settings} textarea[name=aliases]`, 'new-alias.test');
    t.equal(await submit(page, 'button:has-text("Save policy")'), 302);
    t.match(await domainOf('new-corp.test'), {
      settings: { abusePolicy: 'flag', abusePolicyOverride: true, spamHeaderName: 'X-Corp-Spam', spamHeaderValue: 'yes' },
      admins: ['boss@new-corp.test'],
      aliases: ['new-alias.test'],
    });
    await page.fill(`${settings} input[name=spamHeaderName]`, 'Subject');
    t.equal(await submit(page, 'button:has-text("Save policy")'), 400);
    t.match(await page.textContent('[role=alert]'), /spamHeaderName: "Subject" identifies, routes, structures or authenticates a message/);
    t.equal((await domainOf('new-corp.test')).settings.spamHeaderName, 'X-Corp-Spam');
    await page.goto(`${w.base}/console/domains/new-corp.test`);
    await shot(page, 'domain');

    // The domain's blocklist: add, then remove.
    const blocklist = () => stack.api('GET', '/inbound/v1/domains/new-corp.test/lists/blocklist', { key }).then((r) => r.body as { item: string }[]);
    await page.selectOption('select[name=list]', 'blocklist');
    await page.fill('input[name=item]', 'Spammer.Example');
    t.equal(await submit(page, 'button:has-text("Add to list")'), 302);
    t.same((await blocklist()).map((i) => i.item), ['spammer.example']);
    t.match(await page.textContent('h3:has-text("Blocklist") + table'), /spammer\.example/);
    await page.fill('input[name=item]', 'not an item');
    t.equal(await submit(page, 'button:has-text("Add to list")'), 400);
    t.match(await page.textContent('[role=alert]'), /is not a valid IP address, CIDR range, e-mail address or domain/);
    await page.goto(`${w.base}/console/domains/new-corp.test`);
    t.equal(await submit(page, 'h3:has-text("Blocklist") + table button:has-text("Remove")'), 302);
    t.same(await blocklist(), []);

    // Forged posts to every form of the domain: 403, nothing changed.
    const base = `${w.base}/console/domains/new-corp.test`;
    await refusedWithoutCsrf(t, page, {
      [`${w.base}/console/domains/create`]: { domain: 'forged.test', subscriptionHandle: 'default' },
      [`${base}/settings`]: { abusePolicy: 'block' },
      [`${base}/downstreams`]: { ds_target: '' },
      [`${base}/lists/add`]: { list: 'blocklist', item: 'forged.example' },
      [`${base}/lists/remove`]: { list: 'blocklist', item: 'forged.example' },
      [`${base}/delete`]: {},
    });
    t.match(await domainOf('new-corp.test'), { settings: { abusePolicy: 'flag' } });
    t.same(await blocklist(), []);
    t.equal(await domainOf('forged.test'), undefined);

    // Another tenant (its own session, a valid CSRF token of its own): acme's domain is not there for it.
    const bravo = await signIn(t, w, w.bravo.inboundKey);
    const bravoCsrf = await csrfOf(bravo);
    t.equal((await bravo.goto(`${base}`))?.status(), 404);
    t.equal(await forged(bravo, `${base}/delete`, {}, bravoCsrf), 404);
    t.equal(await forged(bravo, `${base}/settings?account=acme`, { abusePolicy: 'block' }, bravoCsrf), 404);
    // A key of the wrong scope: acme's api key has no inbound domains at all.
    const api = await signIn(t, w, w.acme.key);
    t.equal(await api.locator('nav a:has-text("Inbound domains")').count(), 0);
    t.equal(await forged(api, `${base}/delete`, {}, await csrfOf(api)), 404);
    t.equal(await forged(api, `${w.base}/console/domains/create`, { domain: 'api-made.test', subscriptionHandle: 'default' }, await csrfOf(api)), 404);
    t.equal(await domainOf('api-made.test'), undefined);
    t.ok(await domainOf('new-corp.test'), 'still provisioned');

    // A domain admin of acme-corp.test: its domain's lists only; no policy, servers or delete.
    const link = (await stack.api('GET', '/inbound/v1/domains/acme-corp.test/login-link', { key })).body.loginLink as string;
    const admin = await newPage(t);
    await admin.goto(link);
    await admin.click('button:has-text("Sign in")');
    await admin.goto(`${w.base}/console/domains/acme-corp.test`);
    t.equal(await admin.locator('button:has-text("Save policy"), button:has-text("Save servers"), button:has-text("Delete")').count(), 0);
    await admin.fill('input[name=item]', 'partner.example');
    await admin.selectOption('select[name=list]', 'safelist');
    t.equal(await submit(admin, 'button:has-text("Add to list")'), 302);
    t.same((await stack.api('GET', '/inbound/v1/domains/acme-corp.test/lists/safelist', { key })).body.map((i: { item: string }) => i.item), ['partner.example']);
    const adminCsrf = await csrfOf(admin);
    t.equal(await forged(admin, `${w.base}/console/domains/acme-corp.test/delete`, {}, adminCsrf), 404);
    t.equal(await forged(admin, `${w.base}/console/domains/acme-corp.test/downstreams`, { ds_target: '' }, adminCsrf), 404);
    t.equal((await admin.goto(`${base}`))?.status(), 404, 'another domain of the account');
    t.equal((await domainOf('acme-corp.test')).downstreamAddresses.length, 1);

    // The account's own lists (every domain): add and remove; the domain admin and the api key cannot.
    const accountList = () => stack.api('GET', '/inbound/v1/lists/safelist', { key }).then((r) => (r.body as { item: string }[]).map((i) => i.item));
    await page.goto(`${w.base}/console/lists`);
    await page.fill('input[name=item]', '192.0.2.0/24');
    t.equal(await submit(page, 'button:has-text("Add")'), 302);
    t.match(await page.textContent('.flash'), /Added/);
    t.same(await accountList(), ['192.0.2.0/24']);
    await refusedWithoutCsrf(t, page, {
      [`${w.base}/console/lists/account/add`]: { list: 'safelist', item: 'forged.example' },
      [`${w.base}/console/lists/account/remove`]: { list: 'safelist', item: '192.0.2.0/24' },
    });
    t.equal(await forged(admin, `${w.base}/console/lists/account/remove`, { list: 'safelist', item: '192.0.2.0/24' }, adminCsrf), 404, 'a domain admin');
    t.equal(await forged(api, `${w.base}/console/lists/account/remove`, { list: 'safelist', item: '192.0.2.0/24' }, await csrfOf(api)), 404, 'an api key');
    t.equal(await forged(bravo, `${w.base}/console/lists/account/remove?account=acme`, { list: 'safelist', item: '192.0.2.0/24' }, bravoCsrf), 404, 'another tenant');
    t.same(await accountList(), ['192.0.2.0/24']);
    t.equal(await submit(page, 'h3:has-text("Safelist") + table button:has-text("Remove")'), 302);
    t.same(await accountList(), []);

    // Delete, from the domain's page.
    await page.goto(`${w.base}/console/domains/new-corp.test`);
    t.equal(await submit(page, 'button:has-text("Delete new-corp.test")'), 302);
    t.equal(new URL(page.url()).pathname, '/console/domains');
    t.match(await page.textContent('.flash'), /Domain deleted/);
    t.equal(await domainOf('new-corp.test'), undefined);
  });

  t.test('webhooks: enrol (a private target refused until allowed), validate, delete; forged and foreign posts refused', async (t) => {
    const w = await consoleWorld(t);
    const receiver = await startReceiver(t);
    const hooks = () => w.stack.api('GET', '/tx/v1/webhook', { key: w.acme.key }).then((r) => r.body as { webhook: string }[]);
    const page = await signIn(t, w, w.acme.key);
    await page.click('nav a:has-text("Webhooks")');

    await privateTargets(w, false);
    await page.fill('input[name=endpoint]', receiver.url);
    t.equal(await submit(page, 'button:has-text("Enrol endpoint")'), 400);
    t.match(await page.textContent('[role=alert]'), /webhook endpoint resolves to 127\.0\.0\.1, .*security\.allow_private_targets/);
    t.equal(await page.inputValue('input[name=endpoint]'), receiver.url);
    t.same(await hooks(), []);

    await privateTargets(w, true);
    t.equal(await submit(page, 'button:has-text("Enrol endpoint")'), 302);
    t.match(await page.textContent('.flash'), /Endpoint enrolled/);
    t.same(await hooks(), [{ webhook: receiver.url }]);

    t.equal(await submit(page, 'button:has-text("Send a test event")'), 302);
    t.match(await page.textContent('.flash'), /Test event delivered: the endpoint answered 200/);
    t.equal(receiver.posts.length, 1, 'the test event reached the endpoint');
    receiver.mode = () => ({ status: 500 });
    t.equal(await submit(page, 'button:has-text("Send a test event")'), 302);
    t.match(await page.textContent('.error'), /Test event failed: the endpoint answered 500/);
    await shot(page, 'webhooks');

    await refusedWithoutCsrf(t, page, {
      [`${w.base}/console/webhooks/enrol`]: { endpoint: 'https://forged.example/hook' },
      [`${w.base}/console/webhooks/validate`]: {},
      [`${w.base}/console/webhooks/delete`]: {},
    });
    t.equal(receiver.posts.length, 2, 'no forged validation posted');
    // bravo (a valid token of its own) cannot reach acme's endpoint; acme's inbound key has no webhooks.
    const bravo = await signIn(t, w, w.bravo.key);
    t.equal(await forged(bravo, `${w.base}/console/webhooks/delete?account=acme`, {}, await csrfOf(bravo)), 404);
    const inbound = await signIn(t, w, w.acme.inboundKey);
    t.equal(await forged(inbound, `${w.base}/console/webhooks/delete`, {}, await csrfOf(inbound)), 404);
    t.equal((await inbound.goto(`${w.base}/console/webhooks`))?.status(), 404);
    t.same(await hooks(), [{ webhook: receiver.url }]);

    t.equal(await submit(page, 'button:has-text("Delete endpoint")'), 302);
    t.match(await page.textContent('.flash'), /Endpoint deleted/);
    t.same(await hooks(), []);
  });

  t.test('monitors: create (a private webhook refused until allowed), edit, delete; refusals shown; scope held', async (t) => {
    const w = await consoleWorld(t);
    const receiver = await startReceiver(t);
    const monitors = () => w.stack.api('GET', '/tx/v1/monitors', { key: w.acme.key }).then((r) => r.body as { id: number; condition: string; interval_hours: number; delivery: string; webhook_url?: string; email?: string }[]);
    const page = await signIn(t, w, w.acme.key);
    await page.click('nav a:has-text("Monitors")');

    await privateTargets(w, false);
    await page.selectOption('select[name=condition]', 'sender_id_blocked');
    await page.fill('input[name=interval_hours]', '2');
    await page.selectOption('select[name=delivery]', 'webhook');
    await page.fill('input[name=target]', receiver.url);
    t.equal(await submit(page, 'button:has-text("Create monitor")'), 400);
    t.match(await page.textContent('[role=alert]'), /webhook_url resolves to 127\.0\.0\.1/);
    t.equal(await page.inputValue('input[name=target]'), receiver.url);
    t.same(await monitors(), []);

    await privateTargets(w, true);
    t.equal(await submit(page, 'button:has-text("Create monitor")'), 302);
    t.match(await page.textContent('.flash'), /Monitor created/);
    const [made] = await monitors();
    t.match(made, { condition: 'sender_id_blocked', interval_hours: 2, delivery: 'webhook', webhook_url: receiver.url });
    t.match(await page.textContent('table'), new RegExp(`Sender ID is blocked.*2 h.*webhook.*${new Date(w.stack.clock.now()).toISOString().slice(0, 10)}`));

    // Edit: a refused change leaves it as it was; an accepted one replaces it.
    await page.click(`a:text-is("#${made!.id}")`);
    await page.fill('input[name=interval_hours]', '48');
    t.equal(await submit(page, 'button:has-text("Save monitor")'), 400);
    t.match(await page.textContent('[role=alert]'), /interval_hours: must be an integer from 1 to 24/);
    t.equal(await page.inputValue('input[name=interval_hours]'), '48');
    t.same((await monitors()).map((m) => [m.id, m.interval_hours]), [[made!.id, 2]]);
    await page.fill('input[name=interval_hours]', '6');
    await page.selectOption('select[name=delivery]', 'email');
    await page.fill('input[name=target]', 'ops@rcpt.test');
    t.equal(await submit(page, 'button:has-text("Save monitor")'), 302);
    const after = await monitors();
    t.equal(after.length, 1);
    t.match(after[0], { condition: 'sender_id_blocked', interval_hours: 6, delivery: 'email', email: 'ops@rcpt.test' });
    t.not(after[0]!.id, made!.id);
    t.match(await page.textContent('.flash'), `Monitor saved as #${after[0]!.id}`);
    t.equal((await w.stack.api('GET', `/tx/v1/monitors/${made!.id}`, { key: w.acme.key })).status, 404, 'the old one is gone');
    await shot(page, 'monitors');
    const id = after[0]!.id;

    await refusedWithoutCsrf(t, page, {
      [`${w.base}/console/monitors/create`]: { condition: 'sender_id_blocked', interval_hours: '1', delivery: 'email', target: 'x@rcpt.test' },
      [`${w.base}/console/monitors/${id}/edit`]: { condition: 'sender_id_blocked', interval_hours: '1', delivery: 'email', target: 'x@rcpt.test' },
      [`${w.base}/console/monitors/${id}/delete`]: {},
    });
    // Another tenant, with its own valid token, and acme's inbound key: 404, nothing changed or created.
    const bravo = await signIn(t, w, w.bravo.key);
    const bravoCsrf = await csrfOf(bravo);
    t.equal((await bravo.goto(`${w.base}/console/monitors/${id}`))?.status(), 404);
    t.equal(await forged(bravo, `${w.base}/console/monitors/${id}/delete`, {}, bravoCsrf), 404);
    t.equal(await forged(bravo, `${w.base}/console/monitors/${id}/edit`, { condition: 'sender_id_blocked', interval_hours: '1', delivery: 'email', target: 'x@rcpt.test' }, bravoCsrf), 404);
    t.same((await w.stack.api('GET', '/tx/v1/monitors', { key: w.bravo.key })).body, [], 'the foreign edit created nothing for bravo');
    const inbound = await signIn(t, w, w.acme.inboundKey);
    t.equal(await inbound.locator('nav a:has-text("Monitors")').count(), 0);
    t.equal(await forged(inbound, `${w.base}/console/monitors/${id}/delete`, {}, await csrfOf(inbound)), 404);
    t.same((await monitors()).map((m) => [m.id, m.interval_hours]), [[id, 6]]);

    // The operator picks the account: a monitor made for bravo is bravo's.
    const op = await signIn(t, w, (await w.stack.services.console.createToken('ops', w.stack.clock.now())).token);
    await op.goto(`${w.base}/console/monitors?account=bravo`);
    await op.fill('input[name=interval_hours]', '3');
    await op.fill('input[name=target]', 'ops@rcpt.test');
    t.equal(await submit(op, 'button:has-text("Create monitor")'), 302);
    t.match((await w.stack.api('GET', '/tx/v1/monitors', { key: w.bravo.key })).body, [{ interval_hours: 3, email: 'ops@rcpt.test' }]);
    t.equal((await monitors()).length, 1, 'nothing made for acme');

    await page.goto(`${w.base}/console/monitors`);
    t.equal(await submit(page, 'button:has-text("Delete")'), 302);
    t.match(await page.textContent('.flash'), /Monitor deleted/);
    t.same(await monitors(), []);
  });
}
