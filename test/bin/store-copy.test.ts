// Checks `sluice store copy` end to end (issue 33 item 7): state made through a real SQLite `sluice serve` moves to
// PostgreSQL whole (keys, accounts, DKIM, suppressions, webhook, inbound domain, the queue and its bodies), a node on
// PostgreSQL serves it and delivers the waiting mail once; the copy refuses a running data_dir and a non-empty database
// (store-copy-refusals.test.ts has the other refusals).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { openPostgresStore } from '../../storage/postgres/store.js';
import { pgStoredBody } from '../../storage/postgres/bodies.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { freshDatabase, psql } from '../helpers/pg-cluster.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { tempDir, testEnv } from '../helpers/stack.js';
import { cliIn as cli, dbName } from '../helpers/cli-in.js';

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** The bodies of a stopped data_dir's messages by subject: inline rows and spool files, read underneath. */
function sqliteBodies(dir: string): Map<string, Buffer> {
  const db = openDatabase(dir);
  try {
    const rows = db.prepare('SELECT m.subject, m.body_ref, b.body FROM messages m LEFT JOIN message_bodies b ON b.message_id = m.id').all() as { subject: string; body_ref: string; body: Buffer | null }[];
    return new Map(rows.map((r) => [r.subject, r.body ?? fs.readFileSync(path.join(dir, 'spool', r.body_ref.slice('spool:'.length)))]));
  } finally {
    db.close();
  }
}

t.test('a data_dir moves to PostgreSQL whole: a node there serves its state and delivers its queue once', async (t) => {
  t.setTimeout(180_000);
  let up = false;
  // The MX answers 451 until it "comes up": the messages wait in the queue, deferred.
  const sink = await startSink(t, { tls: false, onRcpt: () => (up ? undefined : { code: 451, message: '4.3.2 try again later' }) });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  const receiver = await startReceiver(t);
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off' };
  const a = tempDir(t);
  const first = serveBinary(t, a, env);
  const info = await first.listening;
  const key = firstKey(a);
  const api = async (base: string, method: string, p: string, body?: unknown, k = key) => {
    const res = await fetch(`http://${base}${p}`, { method, headers: { 'X-Api-Key': k, 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  // State made through the API of the SQLite node.
  t.equal((await api(info.http, 'POST', '/tx/v1/sub-account', { company_name: 'Shop', handle: 'shop' })).status, 201, 'sub-account');
  const subKey = (await api(info.http, 'POST', '/tx/v1/sub-account/shop/api-key')).body.key as string;
  const dkim = await api(info.http, 'POST', '/tx/v1/domains/sender.test/dkim-keys', { selector: 's1' });
  t.equal(dkim.status, 201, 'DKIM key');
  const suppressed = await api(info.http, 'POST', '/tx/v1/suppression-list', { suppression_entries: [{ recipient: 'gone@example.com', source: 'hard_bounce' }] });
  t.equal(suppressed.status, 201, 'suppression');
  t.equal((await api(info.http, 'POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`)).status, 201, 'webhook');
  const publicKey = (await api(info.http, 'GET', '/notifications/v1/webhook/public-key')).body.key as string;
  const inboundKey = (await cli({ ...testEnv(a), ...env }, 'keys', 'create', '--account', 'default', '--scope', 'inbound', '--json')).out;
  const ik = JSON.parse(inboundKey).key as string;
  const provisioned = await api(info.http, 'POST', '/inbound/v1/domains', {
    domain: 'corp.test', subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' },
    downstreamAddresses: [{ priority: 10, weight: 1, port: 2525, target: '127.0.0.1' }],
  }, ik);
  t.equal(provisioned.status, 201, 'inbound domain');
  // Three queued messages, one of them 1.2 MB (a spool file), deferred by the MX.
  const large = 'large body line of the moved message\n'.repeat(32_000);
  const subjects = ['small-1', 'small-2', 'large'];
  for (const s of subjects) {
    const sent = await api(info.http, 'POST', '/tx/v1/send-async', {
      personalizations: [{ to: [{ email: `${s}@rcpt.test` }] }], from: { email: 'app@sender.test' }, subject: s,
      content: [{ type: 'text/plain', value: s === 'large' ? large : `body of ${s}` }],
    });
    t.equal(sent.status, 202, `${s} accepted`);
  }
  // Each deferred once (the predicate is asked at every new line, which `lines` holds by then).
  await first.waitForLine(() => first.lines.filter((l) => l.msg === 'delivery attempt').length >= 3);

  // Refused while the server runs on the data_dir.
  const url = await freshDatabase();
  const copyEnv = { ...testEnv(a), ...env };
  const busy = await cli(copyEnv, 'store', 'copy', '--to', url);
  t.equal(busy.code, 1, 'running data_dir refused');
  t.equal(busy.err, `sluice: sluice serve (pid ${first.child.pid}) is running on data_dir ${a}: stop it first; nothing was copied\n`);
  t.equal(await psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", dbName(url)), '0', 'the target untouched');

  first.child.kill('SIGTERM');
  await exited(first.child);
  const before = sqliteBodies(a);
  t.ok(before.get('large')!.length >= 1_000_000, 'the large body is over 1 MB');
  t.ok(fs.readdirSync(path.join(a, 'spool')).length > 0, 'and spooled');

  // The copy: every table and body, verified.
  const copied = await cli(copyEnv, 'store', 'copy', '--to', url);
  t.equal(copied.code, 0, copied.err);
  const row = (table: string) => new RegExp(`^  ${table} +(\\d+) +(\\d+)$`, 'm').exec(copied.out);
  t.equal(row('accounts')?.[1], '2', 'accounts: default and shop');
  t.equal(row('messages')?.[1], '3', 'messages');
  t.equal(row('deliveries')?.[1], '3', 'deliveries');
  t.equal(row('dkim_keys')?.[1], '1', 'the DKIM key');
  t.equal(row('inbound_domains')?.[1], '1', 'the inbound domain');
  t.equal(row('webhooks')?.[1], '1', 'the webhook');
  t.equal(row('suppressions')?.[1], '1', 'the suppression');
  t.equal(row('bodies \\(data_dir/spool\\)')?.[1], '1', 'one spooled body');
  t.ok(Number(row('bodies \\(data_dir/spool\\)')?.[2]) >= 1_000_000, 'its bytes');
  t.match(copied.out, /^not copied:\n {2}cache_generations: .*\n {2}smtp_log_subject\*: .*\n {2}job_leads: .*\n {2}webhooks\.events_after: .*\n/m);
  t.match(copied.out, /^verified: \d+ tables, \d+ rows and 1 spooled bodies read back from PostgreSQL with equal counts and digests$/m);
  t.notOk(copied.out.includes('secret'), 'no password printed');

  // Bodies byte-identical in PostgreSQL.
  const store = await openPostgresStore({ url, poolSize: 1, now: Date.now });
  t.teardown(() => store.close());
  const pgRows = await store.pg.query<{ id: number; size: number; body_ref: string; subject: string }>('SELECT id, size, body_ref, subject FROM messages');
  for (const r of pgRows) {
    const ref = pgStoredBody(r)!;
    const chunks: Buffer[] = [];
    for await (const c of await store.bodies.open(ref)) chunks.push(c as Buffer);
    t.equal(sha(Buffer.concat(chunks)), sha(before.get(r.subject)!), `${r.subject}: body identical (${r.body_ref.split(':')[0]})`);
  }
  t.equal((await store.pg.query<{ n: number }>("SELECT count(*)::int AS n FROM body_blobs WHERE size IS NOT NULL"))[0]!.n, 1, 'the large body is chunked');

  // A second copy into the same database is refused, and changes nothing.
  const again = await cli(copyEnv, 'store', 'copy', '--to', url);
  t.equal(again.code, 1);
  t.match(again.err, /^sluice: the database already holds data \(in .*\): copy into a new, empty database \(createdb\); nothing was copied\n$/);

  // A node on PostgreSQL with a fresh data_dir: the old keys work, the state is there, the queue delivers once.
  const b = tempDir(t);
  const pgEnv = { ...env, SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: url };
  const second = serveBinary(t, b, pgEnv);
  const info2 = await second.listening;
  t.notOk(fs.existsSync(path.join(b, 'initial-api-key')), 'no new first key: the copied accounts are there');
  const subs = await api(info2.http, 'GET', '/tx/v1/sub-account');
  t.equal(subs.status, 200, 'the old API key works');
  t.ok(subs.body.some((s: { handle: string }) => s.handle === 'shop'), 'the sub-account is there');
  t.equal((await api(info2.http, 'GET', '/tx/v1/webhook', undefined, subKey)).status, 200, "the sub-account's key works");
  const keys = await api(info2.http, 'GET', '/tx/v1/domains/sender.test/dkim-keys');
  t.ok(JSON.stringify(keys.body).includes(dkim.body.public_key), 'the DKIM key is there');
  const list = await api(info2.http, 'GET', '/tx/v1/suppression-list');
  t.match(JSON.stringify(list.body), /gone@example\.com/, 'the suppression is there');
  t.same((await api(info2.http, 'GET', '/tx/v1/webhook')).body, [{ webhook: receiver.url }], 'the webhook is there');
  t.equal((await api(info2.http, 'GET', '/notifications/v1/webhook/public-key')).body.key, publicKey, 'the same webhook signing key');
  const domains = await api(info2.http, 'GET', '/inbound/v1/domains', undefined, ik);
  t.equal(domains.status, 200, 'the inbound key works');
  t.match(JSON.stringify(domains.body), /"corp\.test"/, 'the inbound domain is there');
  // New rows take new ids (the identity sequences moved past the copied ones).
  t.equal((await api(info2.http, 'POST', '/tx/v1/sub-account', { company_name: 'Two', handle: 'shop2' })).status, 201, 'a new sub-account');

  up = true;
  const retried = await cli({ ...testEnv(b), ...pgEnv }, 'queue', 'retry', '--all');
  t.equal(retried.code, 0, retried.err);
  const delivered = await sink.waitFor(3);
  const bySubject = new Map(delivered.map((m) => [/\r\nSubject: ([^\r]+)\r\n/.exec(`\r\n${m.raw.toString('latin1')}`)?.[1], m.raw]));
  t.same([...bySubject.keys()].sort(), [...subjects].sort(), 'each waiting message delivered');
  for (const s of subjects) {
    const raw = bySubject.get(s)!;
    const body = before.get(s)!;
    t.ok(raw.subarray(raw.length - body.length).equals(body), `${s}: delivered byte-identical to what the VM stored`);
    t.match(raw.toString('latin1'), /DKIM-Signature:[^]*s=s1;/, `${s}: signed with the copied DKIM key`);
  }
  const queue = await cli({ ...testEnv(b), ...pgEnv }, 'queue', 'list', '--json');
  t.same(JSON.parse(queue.out), [], 'nothing left to deliver: each message went once');
  t.equal(sink.messages.length, 3, 'three messages at the MX');
  second.child.kill('SIGTERM');
  await exited(second.child);
});
