// Checks the CLI against a running server on the same data_dir: accounts, keys, passwords, lockdown, backup, usage.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { startServer } from '../../bin/server.js';
import { loadConfig } from '../../config/load.js';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { tempDir, testEnv } from '../helpers/stack.js';

t.test('CLI → API round trip', async (t) => {
  const dir = tempDir(t);
  const env = testEnv(path.join(dir, 'data'));
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd: dir });
    return { code, out: out.join(''), err: err.join('') };
  };

  const created = await cli('accounts', 'create', '--handle', 'acme', '--company', 'Acme Inc', '--json');
  t.equal(created.code, 0, created.err);
  const acct = JSON.parse(created.out);
  t.same(Object.keys(acct), ['handle', 'key'], 'the key is `key`, as keys create names it');
  t.equal(acct.handle, 'acme');
  t.match(created.out, /^\{"handle":"acme","key":"[A-Za-z0-9_-]{32}"\}\n$/);

  const server = await startServer({ config: loadConfig({ env, cwd: dir }).config, logger: pino({ level: 'silent' }) });
  t.teardown(() => server.close());
  t.equal(server.firstApiKey, undefined, 'no default account when accounts exist');
  const base = `http://127.0.0.1:${server.http!.port}`;
  const get = (p: string, key: string) => fetch(base + p, { headers: { 'X-Api-Key': key } });
  t.equal((await get('/tx/v1/sub-account', acct.key)).status, 200);

  const k = await cli('keys', 'create', '--account', 'acme', '--scope', 'inbound', '--json');
  const key = JSON.parse(k.out);
  t.same(Object.keys(key), ['id', 'key', 'scope']);
  t.equal(key.scope, 'inbound');
  t.type(key.id, 'number');
  t.equal((await get('/inbound/v1/status', key.key)).status, 200);

  const listed = await cli('keys', 'list', '--account', 'acme', '--json');
  const rows = JSON.parse(listed.out);
  t.equal(rows.length, 2);
  t.notOk(listed.out.includes(key.key), 'listing is redacted');
  t.notOk(listed.out.includes(acct.key));

  t.equal((await cli('keys', 'revoke', '--account', 'acme', '--id', String(key.id))).code, 0);
  t.equal((await get('/inbound/v1/status', key.key)).status, 401, 'revoked key fails on the next request');
  t.equal((await cli('keys', 'revoke', '--account', 'acme', '--id', String(key.id))).code, 1);

  const accounts = JSON.parse((await cli('accounts', 'list', '--json')).out);
  t.same(accounts.map((a: any) => [a.handle, a.company_name, a.enabled]), [['acme', 'Acme Inc', true]]);
  t.equal((await cli('accounts', 'create', '--handle', 'acme')).code, 1, 'duplicate handle');

  const pw = JSON.parse((await cli('smtp-passwords', 'create', '--account', 'acme', '--json')).out);
  t.equal(pw.username, 'acme');
  t.ok(await server.accounts.authenticateSmtp('acme', pw.smtp_password));
  const pws = await cli('smtp-passwords', 'list', '--account', 'acme', '--json');
  t.notOk(pws.out.includes(pw.smtp_password));
  t.equal((await cli('smtp-passwords', 'delete', '--account', 'acme', '--id', String(pw.id))).code, 0);
  t.notOk(await server.accounts.authenticateSmtp('acme', pw.smtp_password));

  t.equal((await cli('lockdown', 'allow', '--account', 'acme', '--domain', 'Shop.Example.')).code, 0);
  t.same(JSON.parse((await cli('lockdown', 'list', '--account', 'acme', '--json')).out).map((r: any) => r.domain), ['shop.example']);
  t.equal((await cli('lockdown', 'deny', '--account', 'acme', '--domain', 'shop.example')).code, 0);

  // Online backup while the server holds the database open and writes to it.
  const backup = path.join(dir, 'backups', 'snap');
  const writes = Array.from({ length: 20 }, (_, i) => fetch(base + '/tx/v1/sub-account', {
    method: 'POST', headers: { 'X-Api-Key': acct.key, 'Content-Type': 'application/json' }, body: JSON.stringify({ handle: `sub${i}x` }),
  }));
  const b = await cli('backup', backup);
  await Promise.all(writes);
  t.equal(b.code, 0, b.err);
  const restored = path.join(dir, 'restored');
  fs.mkdirSync(restored);
  fs.copyFileSync(path.join(backup, 'sluice.db'), path.join(restored, 'sluice.db'));
  const db = openDatabase(restored);
  t.teardown(() => db.close());
  t.equal(createAccountStore(db).findByHandle('acme')?.company_name, 'Acme Inc', 'snapshot holds the data');
  t.equal((await cli('backup', backup)).code, 1, 'refuses to overwrite');

  for (const argv of [['keys', 'create', '--account', 'acme'], ['nonsense'], ['accounts', 'create', '--handle', 'NO'], ['--bogus'], ['queue', 'retry']]) {
    const r = await cli(...argv);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.err, /sluice: /);
  }
  const help = await cli('help');
  t.match(help.out, /Usage: sluice <command>/);
});
