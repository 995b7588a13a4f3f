// Checks that real storage failures (a write lock held by another connection, a full database, a corrupt page)
// answer 503 with Retry-After in each group's error shape, and that /healthz and /readyz tell the truth about them.
import fs from 'node:fs';
import t, { type Test } from 'tap';
import { databasePath, openDatabase } from '../../storage/sqlite/database.js';
import { createSmtpLogStore } from '../../storage/sqlite/smtp-log.js';
import { startStack, type Stack } from '../helpers/stack.js';

const UNAVAILABLE = 'storage is temporarily unavailable; try again later';
const LISTENERS = { http: true, mx: true, submission: true };

async function world(t: Test, env: Record<string, string> = {}, lockWaitMs?: number) {
  const stack = await startStack(t, { env, ...(lockWaitMs === undefined ? {} : { lockWaitMs }) });
  const acme = await stack.createAccount('acme');
  const inbound = await stack.accounts.createApiKey(acme.id, 'inbound', stack.clock.now());
  if (!inbound.ok) throw new Error('inbound key');
  return { stack, key: acme.key, inboundKey: inbound.value.key, id: acme.id };
}

/** A second connection to the server's database file, closed at teardown: the other process of a real fault. */
function otherConnection(t: Test, stack: Stack) {
  const other = openDatabase(stack.dataDir);
  t.teardown(() => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
  });
  return other;
}

/** 503, Retry-After and the group's error body: `{"errors":[…]}` (tx) or `{"code","errors","message"}`. */
function assert503(t: Test, res: Awaited<ReturnType<Stack['api']>>, shape: 'tx' | 'coded', what: string) {
  t.equal(res.status, 503, what);
  t.equal(res.headers.get('retry-after'), '5', `${what}: Retry-After`);
  const body = shape === 'tx' ? { errors: [UNAVAILABLE] } : { code: 503, errors: [UNAVAILABLE], message: UNAVAILABLE };
  t.same(res.body, body, `${what}: group shape`);
}

t.test('a write lock held elsewhere: 503 on tx and inbound writes, health degraded with the reason until a write commits', async (t) => {
  // A write waits for a lock held elsewhere (5 s, off the event loop) before it gives up with SQLITE_BUSY; the same
  // wait, shortened, keeps this test fast (three writes below meet the lock).
  const { stack, key, inboundKey } = await world(t, {}, 50);
  t.same((await stack.api('GET', '/healthz')).body, { status: 'ok', storage: true, listeners: LISTENERS });
  t.same((await stack.api('GET', '/readyz')).body, { ready: true });

  const other = otherConnection(t, stack);
  other.exec('BEGIN EXCLUSIVE');
  const failedAt = new Date(stack.clock.now()).toISOString();
  assert503(t, await stack.api('POST', '/tx/v1/sub-account', { key, body: { handle: 'shop', company_name: 'Shop' } }), 'tx', 'POST /tx/v1/sub-account');
  assert503(t, await stack.api('POST', '/inbound/v1/lists/blocklist', { key: inboundKey, body: { item: 'spam@evil.example' } }), 'coded', 'POST /inbound/v1/lists/blocklist');
  // WAL readers never wait for a writer: searching the log still works while writes fail.
  t.equal((await stack.api('POST', '/outbound/v1/search', { key, body: {} })).status, 200, 'reads still answer');

  const reason = `storage: the last write failed at ${failedAt} (database-busy, SQLITE_BUSY)`;
  const degraded = { status: 'degraded', storage: false, listeners: LISTENERS, reasons: [reason] };
  const health = await stack.api('GET', '/healthz');
  t.equal(health.status, 503);
  t.same(health.body, degraded);
  const ready = await stack.api('GET', '/readyz');
  t.equal(ready.status, 503, 'not ready: the probe write meets the lock at once');
  t.same(ready.body, { ready: false, reasons: [reason] });

  other.exec('COMMIT');
  t.same((await stack.api('GET', '/healthz')).body, degraded, 'a released lock is not news until a write commits');
  t.equal((await stack.api('POST', '/outbound/v1/search', { key, body: {} })).status, 200);
  t.equal((await stack.api('GET', '/healthz')).status, 503, 'a read proves nothing about writes');
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key, body: { handle: 'shop', company_name: 'Shop' } })).status, 201, 'the retried write commits');
  const healed = await stack.api('GET', '/healthz');
  t.equal(healed.status, 200);
  t.same(healed.body, { status: 'ok', storage: true, listeners: LISTENERS });

  // With nothing else writing, /readyz's own probe write brings the node back once the lock is gone.
  other.exec('BEGIN EXCLUSIVE');
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key, body: { handle: 'shop2', company_name: 'Shop' } })).status, 503);
  other.exec('COMMIT');
  t.equal((await stack.api('GET', '/healthz')).status, 503);
  const back = await stack.api('GET', '/readyz');
  t.equal(back.status, 200);
  t.same(back.body, { ready: true });
  t.equal((await stack.api('GET', '/healthz')).status, 200, 'the probe was a committed write');
});

t.test('a full database: send-async answers 503 and queues nothing; health says disk-full until a send commits', async (t) => {
  const { stack, key } = await world(t, { SLUICE_OUTBOUND_LOCKDOWN: 'off' });
  const mail = {
    personalizations: [{ to: [{ email: 'bob@dest.example' }] }],
    from: { email: 'app@shop.example' },
    subject: 'Report',
    // ≈ 56 KB composed: under the 64 KiB inline threshold, so the body goes into the database with its row.
    content: [{ type: 'text/plain', value: 'line of the report\n'.repeat(2_800) }],
  };
  const pages = stack.db.pragma('page_count', { simple: true }) as number;
  const free = stack.db.pragma('freelist_count', { simple: true }) as number;
  const pageSize = stack.db.pragma('page_size', { simple: true }) as number;
  t.ok(free * pageSize < 50_000, 'the free pages cannot hold the message');
  // SQLite's own "disk full" (SQLITE_FULL): the file may not grow past its current size.
  stack.db.pragma(`max_page_count = ${pages}`);
  const failedAt = new Date(stack.clock.now()).toISOString();
  assert503(t, await stack.api('POST', '/tx/v1/send-async', { key, body: mail }), 'tx', 'POST /tx/v1/send-async');
  assert503(t, await stack.api('POST', '/tx/v1/send', { key, body: mail }), 'tx', 'POST /tx/v1/send');
  t.equal((stack.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n, 0, 'nothing was queued');
  const health = await stack.api('GET', '/healthz');
  t.equal(health.status, 503);
  t.same(health.body.reasons, [`storage: the last write failed at ${failedAt} (disk-full, SQLITE_FULL)`]);

  stack.db.pragma('max_page_count = 1073741823');
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key, body: mail })).status, 202);
  t.same((await stack.api('GET', '/healthz')).body, { status: 'ok', storage: true, listeners: LISTENERS });
});

t.test('a corrupt page under the log: the search answers 503 in the outbound shape', async (t) => {
  const { stack, key, id } = await world(t);
  createSmtpLogStore(stack.db).insertRow({
    delivery_id: 1,
    account_id: id,
    message_id: 'm1@shop.example',
    request_id: 'r1',
    sender: 'app@shop.example',
    rcpt: 'bob@dest.example',
    size: 10,
    created_at: stack.clock.now(),
  });
  const other = otherConnection(t, stack);
  other.pragma('wal_checkpoint(TRUNCATE)');
  // Zero the pages of the log's table and indexes in the file, as a failing disk would.
  const pageSize = other.pragma('page_size', { simple: true }) as number;
  const roots = other.prepare("SELECT rootpage FROM sqlite_schema WHERE tbl_name = 'smtp_log' AND rootpage > 0").pluck().all() as number[];
  const fd = fs.openSync(databasePath(stack.dataDir), 'r+');
  for (const page of roots) fs.writeSync(fd, Buffer.alloc(pageSize), 0, pageSize, (page - 1) * pageSize);
  fs.closeSync(fd);
  // A commit from the other connection makes the server drop its page cache and read the file again.
  other.prepare("INSERT INTO settings (name, value) VALUES ('corrupted', '1')").run();

  const res = await stack.api('POST', '/outbound/v1/search', { key, body: {} });
  assert503(t, res, 'coded', 'POST /outbound/v1/search');
  t.equal(res.headers.get('x-service-version'), '0.7.0');
});
