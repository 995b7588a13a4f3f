// Checks `sluice backup` and `sluice restore` on the built server: a backup taken while it runs is complete (database,
// TLS pair, ACME state, the first key) and private (0700/0600); restore refuses a running server's data_dir, a
// damaged backup and a data_dir in use, and a restored data_dir serves with nothing lost and the original modes.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import crypto from 'node:crypto';
import t from 'tap';
import { Readable } from 'node:stream';
import { runCli } from '../../bin/cli.js';
import { openSqliteStore } from '../../storage/sqlite/store.js';
import { message } from '../storage/contract/backends.js';
import { mimeOfSize, oldDataDir, spoolFiles } from '../helpers/old-data-dir.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { smtpTalk } from '../helpers/smtp-talk.js';
import { tempDir, testEnv } from '../helpers/stack.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;

/** Every file under `dir`, relative, sorted. */
const walk = (dir: string, rel = ''): string[] =>
  fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((d) => {
    const name = rel ? `${rel}/${d.name}` : d.name;
    return d.isDirectory() ? walk(dir, name) : [name];
  }).sort();

t.test('backup while serving → new data_dir → restore → serve: nothing lost, modes kept', async (t) => {
  t.setTimeout(90_000);
  const dir = tempDir(t);
  const a = path.join(dir, 'a');
  const c = path.join(dir, 'c');
  const cli = async (dataDir: string, ...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runCli(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s), env: testEnv(dataDir), cwd: dir });
    return { code, out, err };
  };
  // A port nothing listens on: the message to dead.test stays deferred in the queue.
  const hold = net.createServer();
  await new Promise<void>((r) => hold.listen(0, '127.0.0.1', r));
  const deadPort = (hold.address() as net.AddressInfo).port;
  await new Promise<void>((r) => hold.close(() => r()));
  const env = { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `dead.test=127.0.0.1:${deadPort}` };
  // ACME state (an account key) lives in data_dir/acme; it must travel with the backup like the rest.
  fs.mkdirSync(path.join(a, 'acme'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(a, 'acme', 'account-key.pem'), 'account key\n', { mode: 0o600 });

  const first = serveBinary(t, a, env);
  const info = await first.listening;
  const key = firstKey(a);
  const api = (base: string, method: string, p: string, body?: unknown) =>
    fetch(`http://${base}${p}`, { method, headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const dkim: any = await (await api(info.http, 'POST', '/tx/v1/domains/sender.test/dkim-keys', { selector: 's1' })).json();
  const sent = await api(info.http, 'POST', '/tx/v1/send-async', {
    personalizations: [{ to: [{ email: 'x@dead.test' }] }], from: { email: 'app@sender.test' }, subject: 'kept', content: [{ type: 'text/plain', value: 'x' }],
  });
  t.equal(sent.status, 202);
  await first.waitForLine((l) => l.msg === 'delivery attempt');
  const queueBefore = JSON.parse((await cli(a, 'queue', 'list', '--json')).out);
  t.equal(queueBefore.length, 1, 'one deferred delivery');

  // The backup, taken while the server runs.
  const b = path.join(dir, 'backups', 'b1');
  const made = await cli(a, 'backup', b);
  t.equal(made.code, 0, made.err);
  t.match(made.out, new RegExp(`^backup written to ${b} \\(`));
  t.equal(mode(b), 0o700, 'backup directory 0700');
  const files = walk(b);
  t.same(files, ['acme/account-key.pem', 'initial-api-key', 'manifest.json', 'sluice.db', 'tls/cert.pem', 'tls/key.pem'], 'complete, and no run/');
  t.same(files.map((f) => mode(path.join(b, f))), files.map(() => 0o600), 'every file 0600');
  t.equal((await cli(a, 'backup', b)).code, 1, 'never overwrites');

  // Restore refuses the data_dir a server runs on.
  const busy = await cli(a, 'restore', b);
  t.equal(busy.code, 1);
  t.equal(busy.err, `sluice: sluice serve (pid ${first.child.pid}) is running on data_dir ${a}: stop it first; nothing was restored\n`);

  // A damaged copy is refused before anything is written.
  const damaged = path.join(dir, 'damaged');
  fs.cpSync(b, damaged, { recursive: true });
  const db = fs.readFileSync(path.join(damaged, 'sluice.db'));
  db[Math.floor(db.length / 2)] ^= 0xff;
  fs.writeFileSync(path.join(damaged, 'sluice.db'), db);
  const bad = await cli(c, 'restore', damaged);
  t.equal(bad.code, 1);
  t.equal(bad.err, `sluice: backup ${damaged}: sluice.db does not match its SHA-256 in manifest.json (the backup is damaged); nothing was restored\n`);
  t.notOk(fs.existsSync(c), 'nothing written');
  const notBackup = await cli(c, 'restore', dir);
  t.match(notBackup.err, /: no readable manifest\.json \(ENOENT\): not a sluice backup; nothing was restored\n$/);

  first.child.kill('SIGTERM');
  await exited(first.child);

  // Restore into a new data_dir: files back with their modes (the database 0600).
  const done = await cli(c, 'restore', b);
  t.equal(done.code, 0, done.err);
  t.match(done.out, new RegExp(`^restored 5 files of the backup of .* into data_dir ${c}; start sluice serve\\n$`));
  t.same(walk(c), ['acme/account-key.pem', 'initial-api-key', 'sluice.db', 'tls/cert.pem', 'tls/key.pem']);
  t.same(
    Object.fromEntries(['', 'sluice.db', 'tls/key.pem', 'tls/cert.pem', 'initial-api-key', 'acme/account-key.pem'].map((f) => [f || '.', mode(path.join(c, f))])),
    { '.': 0o700, 'sluice.db': 0o600, 'tls/key.pem': 0o600, 'tls/cert.pem': mode(path.join(a, 'tls/cert.pem')), 'initial-api-key': 0o600, 'acme/account-key.pem': 0o600 },
  );
  for (const f of ['tls/cert.pem', 'tls/key.pem', 'initial-api-key', 'acme/account-key.pem']) {
    t.ok(fs.readFileSync(path.join(c, f)).equals(fs.readFileSync(path.join(a, f))), `${f} identical`);
  }
  t.match((await cli(c, 'restore', b)).err, new RegExp(`data_dir ${c} is not empty \\(`), 'never over existing state');

  // Serve the restored data_dir: same key, same DKIM key, same queue, same certificate.
  const second = serveBinary(t, c, env);
  const info2 = await second.listening;
  const keys: any = await (await api(info2.http, 'GET', '/tx/v1/domains/sender.test/dkim-keys?include_dns_record=true')).json();
  t.same(keys.keys.map((k: any) => [k.selector, k.public_key]), [['s1', dkim.public_key]], 'the API key and the DKIM key survived');
  t.same(JSON.parse((await cli(c, 'queue', 'list', '--json')).out), queueBefore, 'the queue survived');
  const sub = await smtpTalk(t, Number(info2.submission.split(':')[1]));
  await sub.send('EHLO client.test');
  t.equal((await sub.starttls()).fingerprint256, new crypto.X509Certificate(fs.readFileSync(path.join(a, 'tls/cert.pem'))).fingerprint256, 'the same TLS pair');
  sub.close();
  second.child.kill('SIGTERM');
  await exited(second.child);
  t.equal(second.child.exitCode, 0);
});

t.test('a backup carries the spooled bodies its snapshot names, with their digests; restore checks them and reads them back', async (t) => {
  const dir = tempDir(t);
  const [a, c, b] = ['a', 'c', 'b1'].map((n) => path.join(dir, n)) as [string, string, string];
  const run = (dataDir: string, ...argv: string[]) => runCli(argv, { stdout: () => {}, stderr: () => {}, env: testEnv(dataDir), cwd: dir });
  const large = mimeOfSize('large', 2 * 1024 * 1024);
  const store = openSqliteStore(a, { now: Date.now });
  const res = await store.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: 1 });
  if (!res.ok) throw new Error('account');
  const rec = await message(store, res.value.id, ['u@rcpt.test'], Date.now());
  rec.message.body = await store.bodies.write(Readable.from([large]));
  await store.queue.accept([rec]);
  const orphan = await store.bodies.write(Readable.from([mimeOfSize('orphan', 512 * 1024)])); // written, never committed
  await store.close();
  t.equal(spoolFiles(a).length, 2);

  t.equal(await run(a, 'backup', b), 0);
  const manifest = JSON.parse(fs.readFileSync(path.join(b, 'manifest.json'), 'utf8')) as { files: { path: string; sha256: string }[] };
  const bodies = manifest.files.filter((f) => f.path.startsWith('spool/'));
  t.equal(bodies.length, 1, 'the named body, not the orphan');
  t.notOk(bodies.some((f) => f.path.endsWith(orphan.key.slice(-24))), 'never the orphan');
  t.equal(bodies[0]!.sha256, crypto.createHash('sha256').update(large).digest('hex'), 'with its SHA-256');

  const damaged = path.join(dir, 'damaged');
  fs.cpSync(b, damaged, { recursive: true });
  fs.appendFileSync(path.join(damaged, bodies[0]!.path), 'x');
  t.equal(await run(path.join(dir, 'never'), 'restore', damaged), 1, 'a damaged body refuses the restore');
  t.notOk(fs.existsSync(path.join(dir, 'never')), 'nothing written');

  t.equal(await run(c, 'restore', b), 0);
  t.equal(mode(path.join(c, bodies[0]!.path)), 0o600);
  const restored = openSqliteStore(c, { now: Date.now });
  t.teardown(() => restored.close());
  const m = (await restored.queue.findMessage(1))!;
  t.ok(Buffer.concat(await (await restored.bodies.open(m.body!)).toArray()).equals(large), 'the body, byte-identical');
});

t.test('a backup made by the previous version (schema 17, bodies in the table, no spool) restores; its large bodies move to the spool', async (t) => {
  const dir = tempDir(t);
  const [old, b, c] = ['old', 'b-old', 'c'].map((n) => path.join(dir, n)) as [string, string, string];
  const bodies = [mimeOfSize('old-0', 1000), mimeOfSize('old-1', 1024 * 1024)];
  const held = mimeOfSize('held', 300 * 1024);
  oldDataDir(old, bodies, held);
  // The previous version's backup: the same format, the database alone (it had no spool).
  fs.mkdirSync(b, { mode: 0o700 });
  fs.copyFileSync(path.join(old, 'sluice.db'), path.join(b, 'sluice.db'));
  const db = fs.readFileSync(path.join(b, 'sluice.db'));
  const files = [{ path: 'sluice.db', size: db.length, sha256: crypto.createHash('sha256').update(db).digest('hex'), mode: 0o600 }];
  fs.writeFileSync(path.join(b, 'manifest.json'), JSON.stringify({ format: 'sluice-backup/1', sluice: '0.1.0', created_at: new Date().toISOString(), files }));

  t.equal(await runCli(['restore', b], { stdout: () => {}, stderr: () => {}, env: testEnv(c), cwd: dir }), 0);
  const store = openSqliteStore(c, { now: Date.now });
  t.teardown(() => store.close());
  t.equal(spoolFiles(c).length, 2, 'the large queued body and the quarantined one moved into the spool');
  for (const [i, body] of bodies.entries()) {
    const m = (await store.queue.findMessage(i + 1))!;
    t.ok(Buffer.concat(await (await store.bodies.open(m.body!)).toArray()).equals(body), `old-${i} byte-identical`);
  }
  const q = (await store.quarantine.list({ accountId: null, limit: 1, offset: 0 }, Date.now())).rows[0]!;
  t.ok(Buffer.concat(await (await store.quarantine.body(null, q.id))!.open().toArray()).equals(held), 'the quarantined body');
});
