// Holds the Bodies port's contract (storage/ports/bodies.ts) for every backend: small and large bodies round-trip
// byte-identical, a body written and never committed is swept after the grace and not before, release and retention
// free a body, a stored (or quarantined) body survives the sweep, and a full disk rejects as disk-full leaving nothing.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import t from 'tap';
import { storageFailure } from '../../../storage/ports/health.js';
import type { NewQuarantined } from '../../../storage/ports/quarantine.js';
import type { Store } from '../../../storage/ports/store.js';
import { readSource } from '../../../storage/message-source.js';
import { fillDisk, smallDisk } from '../../helpers/small-disk.js';
import { account, BACKENDS, contract, message } from './backends.js';

/** Sizes on both sides of any sensible inline threshold: a few bytes, 60 KiB, 64 KiB + 1, 256 KiB ± 1, 3 MiB. */
const SIZES = [5, 60 * 1024, 64 * 1024 + 1, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024];
const HOUR = 3_600_000;

const random = (n: number) => crypto.randomBytes(n);
/** `bytes` as a stream of 16 KiB chunks, as a socket or a scratch file hands them over. */
const chunked = (bytes: Buffer) => Readable.from(Array.from({ length: Math.ceil(bytes.length / 16384) }, (_, i) => bytes.subarray(i * 16384, (i + 1) * 16384)), { objectMode: false });
const read = async (r: Readable) => Buffer.concat(await r.toArray());

/** A queued message whose body is `body` (written through the port), accepted; returns its stored body reference. */
async function stored(store: Store, acct: number, body: Buffer, at = Date.now(), state: 'queued' | 'dropped' = 'queued') {
  const rec = await message(store, acct, ['a@one.test'], at);
  rec.message.body = await store.bodies.write(chunked(body));
  rec.message.size = body.length;
  rec.deliveries = rec.deliveries.map((d) => ({ ...d, state }));
  const [ids] = await store.queue.accept([rec]);
  const m = await store.queue.findMessage(ids!.messageRowId);
  return { id: ids!.messageRowId, ref: m!.body! };
}

contract('bodies of every size round-trip byte-identical, from a Buffer or a stream, from any offset', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  for (const size of SIZES) {
    const bytes = random(size);
    const { id, ref } = await stored(store, acct, bytes);
    t.equal(ref.size, size, `${size}: size`);
    t.ok((await read(await store.bodies.open(ref))).equals(bytes), `${size}: stream in, same bytes out`);
    t.ok((await read(await store.bodies.open(ref, 3))).equals(bytes.subarray(3)), `${size}: from an offset`);
    // Offsets past the pieces a backend reads a stored chunk in (PostgreSQL: 32 KiB parts of 256 KiB rows).
    for (const at of [32 * 1024, 300 * 1024 + 7].filter((n) => n < size)) {
      t.ok((await read(await store.bodies.open(ref, at))).equals(bytes.subarray(at)), `${size}: from offset ${at}`);
    }
    const viaBuffer = await store.bodies.write(bytes);
    t.equal(viaBuffer.size, size, `${size}: a Buffer too`);
    const later = (await (await reopen()).queue.findMessage(id))!.body!;
    t.ok((await read(await (await reopen()).bodies.open(later))).equals(bytes), `${size}: after a restart`);
  }
});

contract('a body written and never committed (a crash before the accept) is swept after the grace, not before', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const keep = await stored(store, acct, random(1024 * 1024));
  const orphan = await store.bodies.write(chunked(random(1024 * 1024)));
  t.equal(await store.bodies.sweep(Date.now() - HOUR), 0, 'younger than the grace: maybe still waiting for its commit');
  t.ok((await read(await store.bodies.open(orphan))).length > 0, 'still there');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 1, 'past the grace: swept');
  await t.rejects(store.bodies.open(orphan), 'gone');
  t.equal((await read(await store.bodies.open(keep.ref))).length, 1024 * 1024, 'a stored message\'s body survives the sweep');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'nothing left to sweep');
});

contract('release: the message stops naming its body and the body goes; a second release is ignored', async (t, { store }) => {
  const acct = await account(store, 'acme');
  for (const size of [100, 2 * 1024 * 1024]) {
    const { id, ref } = await stored(store, acct, random(size));
    await store.bodies.release(ref);
    t.equal((await store.queue.findMessage(id))!.body, null, `${size}: the record reads body: null`);
    await t.rejects(store.bodies.open(ref), `${size}: the body is gone`);
    await store.bodies.release(ref);
  }
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'release left no orphan to sweep');
});

contract('retention frees spooled and inline bodies of finished messages, leaving no orphan', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const old = Date.now() - 10 * 24 * HOUR;
  const big = await stored(store, acct, random(512 * 1024), old, 'dropped');
  const small = await stored(store, acct, random(200), old + 1, 'dropped');
  const busy = await stored(store, acct, random(512 * 1024), old + 2, 'queued');
  const r = await store.retention.pruneBodies({ before: Date.now() - HOUR, limit: 100 });
  t.equal(r.deleted, 2, 'both finished bodies');
  for (const m of [big, small]) await t.rejects(store.bodies.open(m.ref));
  t.equal((await read(await store.bodies.open(busy.ref))).length, 512 * 1024, 'a queued message keeps its body');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'the freed file went with its row: nothing to sweep');
});

contract('a quarantined body streams in and out whole, survives the sweep, and goes with its entry', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const domain = await store.inboundDomains.provision({
    accountId: acct, callerKeyId: 0, bindKeyId: null, domain: 'corp.test', overwrite: false, now: 1,
    subscription: (await store.inboundDomains.findSubscription(acct, 'default'))!, sections: {},
  });
  if (!domain.ok) throw new Error('provision');
  const bytes = random(2 * 1024 * 1024 + 7);
  const q: NewQuarantined = {
    accountId: acct, domainId: domain.domainId, domain: 'corp.test', queueId: 'Q1', mailFrom: 'x@spam.test', rcptTo: ['bob@corp.test'],
    clientIp: '192.0.2.1', helo: 'spam.test', fromHeader: null, subject: null, messageId: null, score: 10, reason: 'abuse-policy-quarantine',
    verdicts: [], body: chunked(bytes), now: Date.now(), expiresAt: Date.now() + 24 * HOUR,
  };
  const id = await store.quarantine.insert(q);
  t.equal((await store.quarantine.find(acct, id))!.size, bytes.length);
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'a quarantined body is named: never swept');
  const source = (await store.quarantine.body(acct, id))!;
  t.equal(source.size, bytes.length);
  t.ok((await readSource(source)).equals(bytes), 'byte-identical');
  const claim = await store.quarantine.claimRelease(acct, id, Date.now());
  t.ok(claim.ok && (await readSource(claim.body)).equals(bytes), 'the release reads the same bytes');
  await store.quarantine.abortRelease(id, (claim.ok && claim.row.release_started_at) as number);
  t.ok(await store.quarantine.delete(acct, id, Date.now()));
  t.equal(await store.quarantine.body(acct, id), undefined);
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'its file went with it: nothing to sweep');
});

for (const backend of BACKENDS) {
  t.test(`${backend.name}: a full disk while spooling rejects as disk-full and leaves nothing half-stored`, async (t) => {
    const disk = smallDisk(t, 4 * 1024 * 1024);
    if (!disk) return void t.pass('cannot mount a tmpfs here (needs root); test/storage/sqlite/spool.test.ts injects ENOSPC');
    const store = await backend.open(disk, Date.now);
    t.teardown(() => store.close());
    await backend.confine(disk, disk);
    const acct = await account(store, 'acme');
    const kept = await stored(store, acct, random(200 * 1024));
    fillDisk(disk, 300 * 1024);
    const err = await store.bodies.write(chunked(random(2 * 1024 * 1024))).catch((e: unknown) => e);
    t.equal(storageFailure(err), 'disk-full', `rejected as disk-full: ${String(err)}`);
    t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'no temp file, no half body left behind');
    t.equal((await read(await store.bodies.open(kept.ref))).length, 200 * 1024, 'what was stored before is intact');
  });
}

contract('inline: false keeps even a small body out of the accept commit: durable on its own, read back alike, an orphan is swept', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const bytes = random(5000);
  // Written outside the commit, so an orphan of it exists on its own and the sweep finds it (an inline body that no
  // commit named was never stored anywhere: nothing to sweep).
  const orphan = await store.bodies.write(bytes, { inline: false });
  const inlineOrphan = await store.bodies.write(random(5000));
  t.equal(inlineOrphan.size, 5000);
  t.equal(await store.bodies.sweep(Date.now() + 1000), 1, 'the body written outside the commit is swept; the inline one left nothing');
  await t.rejects(store.bodies.open(orphan), 'gone');
  const rec = await message(store, acct, ['a@one.test'], Date.now());
  rec.message.body = await store.bodies.write(chunked(bytes), { inline: false });
  rec.message.size = bytes.length;
  const [ids] = await store.queue.accept([rec]);
  const ref = (await (await reopen()).queue.findMessage(ids!.messageRowId))!.body!;
  t.ok((await read(await (await reopen()).bodies.open(ref))).equals(bytes), 'stored and read back byte-identical after a restart');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 0, 'a named body is not swept');
});
