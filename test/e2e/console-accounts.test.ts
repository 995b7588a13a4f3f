// Drives the console's account-access views in a real browser (Debian's chromium through playwright-core): a tenant
// creates (shown once) and revokes API keys and SMTP passwords of its own account and of its sub-account, creates a
// sub-account, sets and removes its monthly limit, suspends, activates and deletes it; searches, adds and removes
// suppressions and imports and exports them as CSV, within accounts.max_suppressions; the operator allows and denies
// a lockdown domain, which a tenant only sees. Every new form refuses a post without or with a wrong CSRF token, and
// each view answers an inbound key's session and another tenant's 404. With SLUICE_SCREENSHOTS=DIR the views are
// saved as DIR/console-{keys,sub-accounts,suppressions,lockdown}.png.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { consoleWorld, type ConsoleWorld } from '../helpers/console-world.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Saves the page as DIR/console-NAME.png when SLUICE_SCREENSHOTS=DIR. */
const shot = async (page: Page, name: string) => {
  if (process.env.SLUICE_SCREENSHOTS) await page.screenshot({ path: path.join(path.resolve(process.env.SLUICE_SCREENSHOTS), `console-${name}.png`), fullPage: true });
};
const VIEWS = ['keys', 'smtp-passwords', 'sub-accounts', 'suppressions', 'lockdown'];

if (!fs.existsSync(CHROMIUM)) {
  t.fail(`chromium not found at ${CHROMIUM}: apt-get install chromium (or set SLUICE_TEST_CHROMIUM)`);
} else {
  // Five stacks, each with a browser context: about 70 s alone, more on a busy machine than the runner's 120 s.
  t.setTimeout(240_000);
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
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) t.fail(`CSP violation: ${m.text()}`);
    });
    page.on('dialog', (d) => void d.accept());
    t.teardown(() => context.close());
    await page.goto(`${w.base}/console/login`);
    await page.fill('input[name=secret]', secret);
    await page.click('button:has-text("Sign in")');
    t.not(new URL(page.url()).pathname, '/console/login', 'signed in');
    return page;
  }

  /** Posts a form with the page's cookies: `_csrf` as given (undefined: none). */
  const post = (page: Page, url: string, fields: Record<string, string>, csrf?: string) =>
    page.context().request.post(url, { form: { ...fields, ...(csrf === undefined ? {} : { _csrf: csrf }) }, maxRedirects: 0 }).then((r) => r.status());
  const csrfOf = (page: Page) => page.inputValue('input[name=_csrf] >> nth=0');
  const row = (page: Page, text: string) => page.locator('table tbody tr', { hasText: text });
  /** The row whose first cell is `id` exactly (a key's or password's id also appears in dates and keys). */
  const rowOf = (page: Page, id: number) => page.locator('table tbody tr', { has: page.locator('td:first-child', { hasText: new RegExp(`^${id}$`) }) });

  t.test('tenant: API keys and SMTP passwords of its own account and its sub-account, shown once, revoked', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    const page = await signIn(t, w, w.acme.key);
    for (const label of ['API keys', 'SMTP passwords', 'Sub-accounts', 'Suppressions', 'Lockdown']) t.equal(await page.locator(`nav a:text-is("${label}")`).count(), 1, label);

    await page.click('nav a:text-is("API keys")');
    t.equal(await page.locator('table tbody tr').count(), 2, 'its api and inbound keys');
    t.match(await page.textContent('table'), /\(this session\)/);
    t.match(await page.textContent('table'), /2026-11-22 12:00 UTC/, 'dates as yyyy-mm-dd hh:mm UTC');
    await page.selectOption('select[name=scope]', 'inbound');
    await page.click('button:has-text("Create key")');
    const key = (await page.textContent('#secret'))!.trim();
    const made = await stack.accounts.authenticateKey(key);
    t.match(made, { scope: 'inbound', account: { handle: 'acme' } }, 'the key shown works, with the chosen scope');
    await page.goto(`${w.base}/console/keys`);
    t.notMatch(await page.content(), new RegExp(key), 'shown once: not on the page again');
    await shot(page, 'keys');
    await rowOf(page, made!.keyId).locator('button:has-text("Revoke")').click();
    t.match(await page.textContent('.flash'), /Revoked/);
    t.equal(await stack.accounts.authenticateKey(key), undefined, 'revoked');

    // The sub-account's, through the sub-account routes: scope api only.
    await page.goto(`${w.base}/console/keys?account=acmeshop`);
    t.equal(await page.locator('select[name=scope]').count(), 0);
    t.equal(await page.locator('table tbody tr').count(), 1);
    await page.click('button:has-text("Create key")');
    const subKey = (await page.textContent('#secret'))!.trim();
    const sub = await stack.accounts.authenticateKey(subKey);
    t.match(sub, { scope: 'api', account: { handle: 'acmeshop' } });
    await rowOf(page, sub!.keyId).locator('button:has-text("Revoke")').click();
    t.equal(await stack.accounts.authenticateKey(subKey), undefined);

    for (const handle of ['acme', 'acmeshop']) {
      await page.goto(`${w.base}/console/smtp-passwords?account=${handle}`);
      t.match(await page.textContent('main'), /No SMTP passwords/);
      await page.click('button:has-text("Create password")');
      const password = (await page.textContent('#secret'))!.trim();
      t.match(await page.textContent('.notice'), new RegExp(`User name: ${handle}`));
      t.match(await stack.accounts.authenticateSmtp(handle, password), { handle }, `${handle}: the password shown authenticates`);
      await page.goto(`${w.base}/console/smtp-passwords?account=${handle}`);
      t.notMatch(await page.content(), new RegExp(password));
      await page.click('button:has-text("Delete")');
      t.match(await page.textContent('.flash'), /Deleted/);
      t.equal(await stack.accounts.authenticateSmtp(handle, password), undefined, `${handle}: deleted`);
    }

    // Revoking the key of the session itself signs it out.
    await page.goto(`${w.base}/console/keys`);
    await row(page, '(this session)').locator('button:has-text("Revoke")').click();
    t.equal(new URL(page.url()).pathname, '/console/login');
  });

  t.test('tenant: sub-accounts — create, monthly limit set and inherited, suspend, activate, delete', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    await w.send(w.shop, 'ann@rcpt.test', 'one');
    const page = await signIn(t, w, w.acme.key);
    await page.click('nav a:text-is("Sub-accounts")');
    t.match(await row(page, 'acmeshop').textContent(), /acmeshopAcme ShopenabledInherits the parent's1/i);
    await page.fill('input[name=company_name]', 'Acme Outlet');
    await page.fill('input[name=handle]', 'acmeoutlet');
    await page.click('button:has-text("Create sub-account")');
    t.match(await page.textContent('.flash'), /Sub-account created/);
    t.match(await stack.accounts.findByHandle('acmeoutlet'), { company_name: 'Acme Outlet', enabled: true });
    t.ok(await page.locator('header select option[value=acmeoutlet]').count(), 'the switcher lists it');

    await row(page, 'acmeoutlet').locator('input[name=sends]').fill('500');
    await row(page, 'acmeoutlet').locator('button:has-text("Set limit")').click();
    t.match(await page.textContent('.flash'), /Monthly limit set/);
    t.match(await row(page, 'acmeoutlet').textContent(), /enabled500/);
    t.equal((await stack.accounts.findByHandle('acmeoutlet'))!.send_limit, 500);
    await shot(page, 'sub-accounts');
    await row(page, 'acmeoutlet').locator('input[name=sends]').fill('lots');
    await row(page, 'acmeoutlet').locator('button:has-text("Set limit")').click();
    t.match(await page.textContent('main'), /sends: a whole number/);
    await page.goto(`${w.base}/console/sub-accounts`);
    await row(page, 'acmeoutlet').locator('button:has-text("Inherit")').click();
    t.match(await row(page, 'acmeoutlet').textContent(), /inherits the parent's/);
    t.equal((await stack.accounts.findByHandle('acmeoutlet'))!.send_limit, -1);

    await row(page, 'acmeoutlet').locator('button:has-text("Suspend")').click();
    t.match(await row(page, 'acmeoutlet').textContent(), /suspended/);
    t.equal((await stack.accounts.findByHandle('acmeoutlet'))!.enabled, false);
    await row(page, 'acmeoutlet').locator('button:has-text("Activate")').click();
    t.equal((await stack.accounts.findByHandle('acmeoutlet'))!.enabled, true);
    await row(page, 'acmeoutlet').locator('button:has-text("Delete")').click();
    t.match(await page.textContent('.flash'), /Deleted/);
    t.equal(await row(page, 'acmeoutlet').count(), 0);
    t.equal(await stack.accounts.findByHandle('acmeoutlet'), undefined);

    // The sub-account's own session has none of its own.
    const shop = await signIn(t, w, w.shop.key);
    await shop.goto(`${w.base}/console/sub-accounts`);
    t.match(await shop.textContent('main'), /acmeshop is a sub-account: sub-accounts have none/);
  });

  t.test('suppressions: search, add, remove, CSV import and export, within accounts.max_suppressions', async (t) => {
    const w = await consoleWorld(t, { SLUICE_ACCOUNTS_MAX_SUPPRESSIONS: '4' });
    const { stack } = w;
    const listed = async () => (await stack.services.suppressions.list(w.acme.id, { limit: 100, offset: 0 })).map((r) => `${r.recipient}/${r.source}`).sort();
    const page = await signIn(t, w, w.acme.key);
    await page.click('nav a:text-is("Suppressions")');
    t.match(await page.textContent('main'), /The suppression list is empty/);
    await page.fill('form[action*="/add"] input[name=recipient]', 'Ann@Example.com');
    await page.check('input[name=type][value=transactional]');
    await page.fill('form[action*="/add"] input[name=notes]', 'asked by phone');
    await page.click('button:has-text("Add")');
    t.match(await page.textContent('.flash'), /Added/);
    t.match(await row(page, 'ann@example.com').textContent(), /ann@example\.comtransactional, non-transactionalapiasked by phone2026-11-22 12:00 UTC/);

    await page.fill('textarea[name=csv]', 'recipient,suppression_types,source,notes\r\nann@example.com,,api,\r\nbob@example.com,transactional;non-transactional,hard_bounce,"bounced, twice"\r\ncarol@example.com,,,\r\n');
    await page.click('button:has-text("Import")');
    t.match(await page.textContent('.flash'), /Imported 2 entries; 1 skipped/);
    t.same(await listed(), ['ann@example.com/api', 'bob@example.com/hard_bounce', 'carol@example.com/api']);
    t.match(await row(page, 'bob@example.com').textContent(), /bounced, twice/);
    await shot(page, 'suppressions');

    // Search by recipient and by source.
    await page.fill('form.filters[method=get] input[name=recipient]', 'BOB@example.com');
    await page.click('button:has-text("Search")');
    t.equal(await page.locator('table tbody tr').count(), 1);
    await page.goto(`${w.base}/console/suppressions?source=spam_complaint`);
    t.match(await page.textContent('main'), /No entry matches/);

    // A bad row refuses the whole file, naming its line; so does a file the bound cannot take.
    await page.goto(`${w.base}/console/suppressions`);
    await page.fill('textarea[name=csv]', 'recipient\ndave@example.com\nnot-an-address\n');
    await page.click('button:has-text("Import")');
    t.match(await page.textContent('main'), /line 3: recipient: invalid email address/);
    await page.goto(`${w.base}/console/suppressions`);
    await page.fill('textarea[name=csv]', 'recipient\ndave@example.com\nerin@example.com\n');
    await page.click('button:has-text("Import")');
    t.match(await page.textContent('main'), /more than 4 suppression entries/);
    t.equal((await listed()).length, 3, 'nothing stored');

    // Export, and the export imported again adds nothing.
    await page.goto(`${w.base}/console/suppressions`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('a:has-text("Export CSV")')]);
    t.match(download.suggestedFilename(), /^suppressions-acme-2026-11-22\.csv$/);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    const lines = csv.split('\r\n');
    t.equal(lines[0], 'recipient,suppression_types,source,notes,sender,created_at');
    t.ok(lines.includes('bob@example.com,transactional;non-transactional,hard_bounce,"bounced, twice",,2026-11-22T12:00:00.000Z'), csv);
    t.equal(lines.filter((l) => l !== '').length, 4);
    await page.fill('textarea[name=csv]', csv);
    await page.click('button:has-text("Import")');
    t.match(await page.textContent('.flash'), /Imported 0 entries; 3 skipped[^]*created_at column is not kept/);

    await row(page, 'bob@example.com').locator('button:has-text("Remove")').click();
    t.match(await page.textContent('.flash'), /Removed/);
    t.same(await listed(), ['ann@example.com/api', 'carol@example.com/api']);
  });

  t.test('lockdown: the operator allows and denies; a tenant sees its list and cannot change it', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    const op = await signIn(t, w, (await stack.services.console.createToken('ops', stack.clock.now())).token);
    await op.goto(`${w.base}/console/lockdown?account=acme`);
    t.match(await op.textContent('main'), /Domain Lockdown is off/);
    await op.fill('input[name=domain]', 'Sender.Example.');
    await op.click('button:has-text("Allow")');
    t.match(await op.textContent('.flash'), /Allowed/);
    t.same((await stack.store.lockdown.list(w.acme.id)).map((r) => r.domain), ['sender.example']);
    await op.fill('input[name=domain]', 'not a domain');
    await op.click('button:has-text("Allow")');
    t.match(await op.textContent('main'), /domain: not a domain name/);
    await op.goto(`${w.base}/console/lockdown?account=acmeshop`);
    t.match(await op.textContent('h2:has-text("Inherited from acme") + table'), /sender\.example/);
    await shot(op, 'lockdown');

    // The operator manages any account's own keys too.
    await op.goto(`${w.base}/console/keys?account=bravo`);
    await op.click('button:has-text("Create key")');
    t.match(await stack.accounts.authenticateKey((await op.textContent('#secret'))!.trim()), { account: { handle: 'bravo' }, scope: 'api' });

    const tenant = await signIn(t, w, w.acme.key);
    await tenant.goto(`${w.base}/console/lockdown`);
    t.match(await tenant.textContent('table'), /sender\.example/);
    t.match(await tenant.textContent('main'), /Only the operator changes this list/);
    t.equal(await tenant.locator('button:has-text("Allow"), button:has-text("Deny")').count(), 0);
    const csrf = await csrfOf(tenant);
    t.equal(await post(tenant, `${w.base}/console/lockdown/allow`, { domain: 'mine.example' }, csrf), 404);
    t.equal(await post(tenant, `${w.base}/console/lockdown/deny`, { domain: 'sender.example' }, csrf), 404);
    t.same((await stack.store.lockdown.list(w.acme.id)).map((r) => r.domain), ['sender.example'], 'unchanged');
    const shop = await signIn(t, w, w.shop.key);
    await shop.goto(`${w.base}/console/lockdown`);
    t.match(await shop.textContent('main'), /authorized for its parent account apply to it too/);
    t.notMatch(await shop.textContent('main'), /sender\.example/, 'a sub-account\'s session sees nothing of its parent\'s');

    await op.goto(`${w.base}/console/lockdown?account=acme`);
    await op.click('button:has-text("Deny")');
    t.match(await op.textContent('.flash'), /Withdrawn/);
    t.same(await stack.store.lockdown.list(w.acme.id), []);
  });

  t.test('every new form refuses a forged post; inbound and other tenants\' sessions get 404', async (t) => {
    const w = await consoleWorld(t);
    const { stack } = w;
    const acc = stack.accounts;
    await stack.services.suppressions.insertMany([{ accountId: w.acme.id, recipient: 'ann@example.com', source: 'api', transactional: false, nonTransactional: true, notes: null, sender: null }], stack.clock.now());
    await stack.store.lockdown.allow(w.acme.id, 'sender.example', stack.clock.now());
    const pw = await acc.createSmtpPassword(w.acme.id, stack.clock.now());
    const keyId = (await acc.listApiKeys(w.acme.id))[0]!.id;
    const state = async () => JSON.stringify([
      await acc.listApiKeys(w.acme.id), await acc.listApiKeys(w.shop.id), await acc.listSmtpPasswords(w.acme.id), await acc.listSmtpPasswords(w.shop.id),
      await acc.listSubAccounts(w.acme.id, 100, 0), await acc.findByHandle('acmeshop'), await stack.services.suppressions.list(w.acme.id, { limit: 100, offset: 0 }),
      await stack.store.lockdown.list(w.acme.id),
    ]);
    const before = await state();
    const forms: [string, Record<string, string>][] = [
      ['/console/keys/create?account=acme', { scope: 'api' }],
      ['/console/keys/revoke?account=acme', { id: String(keyId) }],
      ['/console/smtp-passwords/create?account=acmeshop', {}],
      ['/console/smtp-passwords/delete?account=acme', { id: String(pw.ok ? pw.value.id : 0) }],
      ['/console/sub-accounts/create?account=acme', { company_name: 'Forged Inc', handle: 'forged' }],
      ['/console/sub-accounts/acmeshop/suspend?account=acme', {}],
      ['/console/sub-accounts/acmeshop/activate?account=acme', {}],
      ['/console/sub-accounts/acmeshop/limit?account=acme', { sends: '1' }],
      ['/console/sub-accounts/acmeshop/inherit?account=acme', {}],
      ['/console/sub-accounts/acmeshop/delete?account=acme', {}],
      ['/console/suppressions/add?account=acme', { recipient: 'eve@example.com', type: 'transactional' }],
      ['/console/suppressions/delete?account=acme', { recipient: 'ann@example.com', source: 'api' }],
      ['/console/suppressions/import?account=acme', { csv: 'recipient\neve@example.com\n' }],
      ['/console/lockdown/allow?account=acme', { domain: 'evil.example' }],
      ['/console/lockdown/deny?account=acme', { domain: 'sender.example' }],
    ];
    // The operator may do each of them: a refusal is the missing or wrong token's.
    const op = await signIn(t, w, (await stack.services.console.createToken('ops', stack.clock.now())).token);
    for (const [path, fields] of forms) {
      t.equal(await post(op, w.base + path, fields), 403, `${path}: no token`);
      t.equal(await post(op, w.base + path, fields, 'forged-token-of-another-page'), 403, `${path}: a wrong token`);
    }
    t.equal(await state(), before, 'nothing changed');
    t.equal(await post(op, `${w.base}/console/suppressions/add?account=acme`, { recipient: 'eve@example.com' }, await csrfOf(op)), 302, 'the real token works');

    // An inbound key's session: no link, no page, no form.
    const inbound = await signIn(t, w, w.acme.inboundKey);
    for (const v of VIEWS) {
      t.equal(await inbound.locator(`nav a[href^="/console/${v}"]`).count(), 0, `${v}: not linked`);
      t.equal((await inbound.goto(`${w.base}/console/${v}`))?.status(), 404, `${v}: inbound key`);
    }
    const inboundCsrf = await csrfOf(inbound);
    t.equal(await post(inbound, `${w.base}/console/keys/create`, { scope: 'api' }, inboundCsrf), 404, 'an inbound key makes no API key');
    t.equal(await post(inbound, `${w.base}/console/suppressions/import`, { csv: 'recipient\nmallory@example.com\n' }, inboundCsrf), 404);

    // Another tenant: acme's pages and forms are not there for it, by URL or by a form naming them.
    const bravo = await signIn(t, w, w.bravo.key);
    for (const v of VIEWS) {
      for (const handle of ['acme', 'acmeshop']) t.equal((await bravo.goto(`${w.base}/console/${v}?account=${handle}`))?.status(), 404, `${v}?account=${handle}`);
    }
    t.equal((await bravo.goto(`${w.base}/console/suppressions/export?account=acme`))?.status(), 404);
    await bravo.goto(`${w.base}/console/keys`);
    const bravoCsrf = await csrfOf(bravo);
    t.equal(await post(bravo, `${w.base}/console/keys/revoke?account=acme`, { id: String(keyId) }, bravoCsrf), 404);
    t.equal(await post(bravo, `${w.base}/console/keys/revoke`, { id: String(keyId) }, bravoCsrf), 404, 'acme\'s key id under its own account');
    t.equal(await post(bravo, `${w.base}/console/sub-accounts/acmeshop/delete`, {}, bravoCsrf), 404, 'acme\'s sub-account under its own');
    t.equal(await post(bravo, `${w.base}/console/suppressions/delete?account=acme`, { recipient: 'ann@example.com', source: 'api' }, bravoCsrf), 404);
    t.equal(await post(bravo, `${w.base}/console/smtp-passwords/delete`, { id: String(pw.ok ? pw.value.id : 0) }, bravoCsrf), 404);
    t.ok(await acc.authenticateKey(w.acme.key), 'acme\'s key lives');
    t.ok(await acc.findByHandle('acmeshop'), 'acmeshop lives');
    t.equal((await acc.listSmtpPasswords(w.acme.id)).length, 1);

    // The sub-account's own key: its own keys, not its parent's.
    const shop = await signIn(t, w, w.shop.key);
    await shop.goto(`${w.base}/console/keys`);
    t.match(await shop.textContent('h1'), /API keys of acmeshop/);
    t.equal((await shop.goto(`${w.base}/console/keys?account=acme`))?.status(), 404);
  });
}
