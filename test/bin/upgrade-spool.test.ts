// Upgrade test: a data_dir of the schema before the spool (user_version 17: every body in message_bodies and
// inbound_quarantine_bodies) with queued messages → `sluice serve` of this version moves the large bodies into the
// spool and delivers every message byte-identical to a real smtp-server sink.
import t from 'tap';
import { INLINE_MAX_BYTES } from '../../storage/sqlite/bodies.js';
import { openSqliteStore } from '../../storage/sqlite/store.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { mimeOfSize, oldDataDir, spoolFiles } from '../helpers/old-data-dir.js';
import { exited, serveBinary } from '../helpers/serve-binary.js';
import { startSink } from '../helpers/smtp-sink.js';
import { tempDir } from '../helpers/stack.js';

t.test('a data_dir of schema 17 with queued large and small bodies: serve moves them to the spool and delivers all byte-identical', async (t) => {
  t.setTimeout(120_000);
  const dir = tempDir(t);
  const bodies = [mimeOfSize('old-0', 200), mimeOfSize('old-1', 3 * 1024 * 1024), mimeOfSize('old-2', INLINE_MAX_BYTES + 6 * 1024), mimeOfSize('old-3', 10 * 1024)];
  const quarantined = mimeOfSize('held', 1024 * 1024);
  oldDataDir(dir, bodies, quarantined);

  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off' };
  const serve = serveBinary(t, dir, env);
  await serve.listening;
  t.equal(spoolFiles(dir).length, 3, 'the two large queued bodies and the quarantined one moved into the spool');
  await sink.waitFor(bodies.length);
  const bySubject = new Map(sink.messages.map((m) => [/\r\nSubject: (old-\d+)\r\n/.exec(`\r\n${m.raw.toString('latin1')}`)?.[1], m.raw]));
  bodies.forEach((body, i) => t.ok(bySubject.get(`old-${i}`)?.equals(body), `old-${i} (${body.length} bytes) delivered byte-identical`));
  serve.child.kill('SIGTERM');
  await exited(serve.child);

  // The quarantined body reads back whole through the port, from its file.
  const store = openSqliteStore(dir, { now: Date.now });
  t.teardown(() => store.close());
  const q = (await store.quarantine.list({ accountId: null, limit: 10, offset: 0 }, Date.now())).rows[0]!;
  const source = (await store.quarantine.body(null, q.id))!;
  t.ok(Buffer.concat(await source.open().toArray()).equals(quarantined), 'the quarantined body, byte-identical');
  const left = store.db.prepare('SELECT count(*) AS n FROM message_bodies WHERE length(body) > ?').get(INLINE_MAX_BYTES) as { n: number };
  t.equal(left.n, 0, 'no large body left in the table');
});
