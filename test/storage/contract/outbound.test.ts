// Holds the outbound ports' contract (storage/ports/tracking-domains.ts, dkim-keys.ts, lockdown.ts, sender-abuse.ts) on
// every backend: conflicts named and nothing written, account scoping, DKIM rotation's timers and the choice of the
// signing key, lockdown's idempotent answers, and strikes, blocks, delistings and their pruning boundaries.
import { DKIM_GRACE_MS, DKIM_RETIRE_MS, type DkimKeyRow } from '../../../storage/ports/dkim-keys.js';
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

const DAY = 86_400_000;


/** A new key (undefined: the selector is taken); no account of these tests comes near accounts.max_dkim_keys. */
async function insertKey(store: Store, k: Parameters<Store['dkimKeys']['insert']>[0]): Promise<DkimKeyRow | undefined> {
  const r = await store.dkimKeys.insert(k);
  if (r === 'full') throw new Error('unexpected: the DKIM key bound');
  return r;
}

contract('tracking domains: a name is unique per account, a hostname+scope across accounts; conflicts write nothing', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const td = store.trackingDomains;
  const made = await td.insert(a, { name: 'clicks', hostname: 'click.alpha.test', scope: 'click' }, 10);
  t.match(made, { ok: true, row: { account_id: a, name: 'clicks', hostname: 'click.alpha.test', scope: 'click', status: 'active', created_at: 10, status_modified_at: 10 } });
  if (!made.ok) return;
  t.same(await td.insert(a, { name: 'clicks', hostname: 'other.alpha.test', scope: 'open' }, 11), { ok: false, conflict: 'name' });
  t.same(await td.insert(b, { name: 'theirs', hostname: 'click.alpha.test', scope: 'click' }, 11), { ok: false, conflict: 'hostname' }, 'anyone\'s hostname+scope');
  t.equal(await td.conflict(b, { name: 'theirs', hostname: 'click.alpha.test', scope: 'click' }), 'hostname');
  t.equal(await td.conflict(a, { name: 'clicks', hostname: 'x.test', scope: 'open' }), 'name');
  t.equal(await td.conflict(b, { name: 'clicks', hostname: 'click.alpha.test', scope: 'open' }), undefined, 'another scope and another account\'s name are free');
  t.match(await td.insert(a, { name: 'opens', hostname: 'click.alpha.test', scope: 'open' }, 12), { ok: true }, 'the same host for another scope');
  t.equal(await td.findByName(b, 'theirs'), undefined, 'the refused insert wrote nothing');

  const other = (await reopen()).trackingDomains;
  t.match(await other.findByHost('click.alpha.test', 'click'), { id: made.row.id, account_id: a }, 'whoever owns it');
  t.equal(await other.findByHost('click.alpha.test', 'unsubscribe'), undefined);
  t.match(await other.find(a, 'click.alpha.test', 'click'), { name: 'clicks' });
  t.equal(await other.find(b, 'click.alpha.test', 'click'), undefined, 'scoped by account');
  t.equal(await other.findByName(b, 'clicks'), undefined);

  t.same(await td.update(made.row, { name: 'opens', status: 'disabled' }, 20), { ok: false, conflict: 'name' });
  t.match(await td.findByName(a, 'clicks'), { status: 'active' }, 'the refused update wrote nothing');
  const up = await td.update(made.row, { name: 'renamed', status: 'disabled' }, 30);
  t.match(up, { ok: true, row: { id: made.row.id, name: 'renamed', status: 'disabled', status_modified_at: 30 } });
  t.match(await td.update((up as { row: typeof made.row }).row, { name: 'renamed', status: 'disabled' }, 40), { ok: true }, 'its own name is no conflict');

  await td.insert(b, { name: 'b1', hostname: 'u.bravo.test', scope: 'unsubscribe' }, 50);
  const page = await td.list(a, {}, 1, 0);
  t.equal(page.total, 2, 'total counts every match');
  t.equal(page.rows.length, 1);
  t.same((await td.list(a, { status: 'disabled' }, 10, 0)).rows.map((r) => r.name), ['renamed']);
  t.same((await td.list(a, { scope: 'open' }, 10, 0)).rows.map((r) => r.name), ['opens']);
  t.same((await td.list(a, { name: 'opens' }, 10, 0)).total, 1);
  t.same((await td.listAll(b)).map((r) => [r.handle, r.name]), [['bravo', 'b1']]);
  t.same((await td.listAll(null)).map((r) => r.handle).sort(), ['alpha', 'alpha', 'bravo']);
  t.equal(await td.remove(b, 'click.alpha.test', 'click'), false, 'not theirs');
  t.equal(await td.remove(a, 'click.alpha.test', 'click'), true);
  t.equal(await td.remove(a, 'click.alpha.test', 'click'), false);
  t.match(await td.insert(b, { name: 'theirs', hostname: 'click.alpha.test', scope: 'click' }, 60), { ok: true }, 'a removed hostname is free again');

  const c = await account(store, 'charlie');
  await td.insert(c, { name: 'first', hostname: 'a.charlie.test', scope: 'click' }, 100);
  await td.insert(c, { name: 'second', hostname: 'b.charlie.test', scope: 'click' }, 50);
  await td.insert(c, { name: 'third', hostname: 'c.charlie.test', scope: 'click' }, 75);
  t.same((await td.list(c, {}, 10, 0)).rows.map((r) => r.name), ['first', 'second', 'third'], 'in the order registered, whatever the time given');
  t.same((await td.list(c, {}, 2, 1)).rows.map((r) => r.name), ['second', 'third'], 'pages follow that order');
  t.same((await td.listAll(c)).map((r) => r.name), ['first', 'second', 'third']);
});

contract('DKIM keys: one per selector and domain, rotated keys sign only in their grace, retired after two weeks', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const dk = store.dkimKeys;
  const key = (accountId: number, domain: string, selector: string, now = 0) =>
    insertKey(store, { accountId, domain, selector, keyLength: 2048, privateKey: `priv-${selector}`, publicKey: `pub-${selector}`, now });
  const k1 = await key(a, 'alpha.test', 's1');
  t.match(k1, { account_id: a, domain: 'alpha.test', selector: 's1', key_length: 2048, status: 'active', grace_period_expires_at: null, retires_at: null });
  t.equal(await key(a, 'alpha.test', 's1', 5), undefined, 'a taken selector');
  t.ok(await key(b, 'alpha.test', 's1'), 'the same selector in another account');
  t.ok(await key(a, 'other.test', 's1'), 'or for another domain');
  t.same(await dk.domains(a), ['alpha.test', 'other.test'], 'by name');
  t.equal(await dk.find(b, 'other.test', 's1'), undefined, 'scoped by account');

  const T = 100 * DAY;
  t.same(await dk.rotate(k1!, { selector: 's1', privateKey: 'p', publicKey: 'q' }, T), { ok: false, reason: 'exists' });
  t.match(await dk.find(a, 'alpha.test', 's1'), { status: 'active' }, 'the refused rotation wrote nothing');
  const rot = await dk.rotate(k1!, { selector: 's2', privateKey: 'priv-s2', publicKey: 'pub-s2' }, T);
  t.match(rot, { ok: true, newKey: { selector: 's2', status: 'active', created_at: T }, rotatedKey: { id: k1!.id, status: 'rotated', status_modified_at: T, grace_period_expires_at: T + DKIM_GRACE_MS, retires_at: T + DKIM_RETIRE_MS } });
  t.same(await dk.rotate(k1!, { selector: 's3', privateKey: 'p', publicKey: 'q' }, T + 1), { ok: false, reason: 'not-active' }, 'a stale row: the stored key decides');
  t.equal(await dk.find(a, 'alpha.test', 's3'), undefined);
  t.same((await dk.list(a, 'alpha.test', { limit: 10, offset: 0 })).map((k) => k.selector), ['s2', 's1'], 'newest first');
  t.same((await dk.list(a, 'alpha.test', { status: 'rotated', limit: 10, offset: 0 })).map((k) => k.selector), ['s1']);
  t.same((await dk.list(a, 'alpha.test', { selector: 's2', limit: 10, offset: 0 })).map((k) => k.status), ['active']);

  t.equal((await dk.findSigningKey([a], 'alpha.test', T + 1))?.selector, 's2', 'the active key first');
  await dk.updateStatus((await dk.find(a, 'alpha.test', 's2'))!, 'revoked', T + 2);
  t.equal((await dk.findSigningKey([a], 'alpha.test', T + DKIM_GRACE_MS - 1))?.selector, 's1', 'no active key: the rotated one inside its grace');
  t.equal(await dk.findSigningKey([a], 'alpha.test', T + DKIM_GRACE_MS + 1), undefined, 'past its grace nothing signs');
  t.equal(await dk.retireDue(T + DKIM_RETIRE_MS - 1), 0, 'not yet');
  t.equal(await dk.retireDue(T + DKIM_RETIRE_MS + 1), 1);
  t.equal(await dk.retireDue(T + DKIM_RETIRE_MS + 2), 0, 'once');
  t.match(await dk.find(a, 'alpha.test', 's1'), { status: 'retired' });

  const k3 = await key(a, 'third.test', 's1', 0);
  const rotated = await dk.updateStatus(k3!, 'rotated', 2 * T);
  t.match(rotated, { status: 'rotated', status_modified_at: 2 * T, grace_period_expires_at: 2 * T + DKIM_GRACE_MS, retires_at: 2 * T + DKIM_RETIRE_MS }, 'rotated by hand starts the same timers');
  t.match(await dk.updateStatus(rotated, 'revoked', 2 * T + 1), { status: 'revoked', status_modified_at: 2 * T + 1 });
  t.equal(await dk.retireDue(3 * T), 0, 'only rotated keys retire; a revoked one stays revoked');
  t.match(await dk.find(a, 'third.test', 's1'), { status: 'revoked' });
  t.same((await dk.list(a, 'alpha.test', { limit: 1, offset: 1 })).length, 1, 'paged');
  t.same(await dk.list(b, 'third.test', { limit: 10, offset: 0 }), [], 'scoped by account');
});

contract('DKIM signing key: the sender\'s active key, then the parent\'s; a rotated key only when no account has an active one', async (t, { store }) => {
  const parent = await account(store, 'parent');
  const child = (await store.accounts.createAccount({ handle: 'child', companyName: 'Child', parentId: parent, now: 0 }));
  if (!child.ok) throw new Error('child');
  const c = child.value.id;
  const dk = store.dkimKeys;
  const ins = (accountId: number, selector: string) => insertKey(store, { accountId, domain: 'shop.test', selector, keyLength: 1024, privateKey: 'x', publicKey: 'y', now: 0 });
  const pActive = await ins(parent, 'p1');
  t.equal((await dk.findSigningKey([c, parent], 'shop.test', 1))?.id, pActive!.id, 'the parent\'s, when the sender has none');
  const cKey = await ins(c, 'c1');
  t.equal((await dk.findSigningKey([c, parent], 'shop.test', 1))?.id, cKey!.id, 'the sender\'s first');
  await dk.rotate(cKey!, { selector: 'c2', privateKey: 'x', publicKey: 'y' }, 10);
  await dk.updateStatus((await dk.find(c, 'shop.test', 'c2'))!, 'revoked', 11);
  t.equal((await dk.findSigningKey([c, parent], 'shop.test', 12))?.id, pActive!.id, 'an active key of the parent beats the sender\'s rotated one');
  await dk.updateStatus(pActive!, 'revoked', 13);
  t.equal((await dk.findSigningKey([c, parent], 'shop.test', 14))?.id, cKey!.id, 'then the rotated key in its grace');
  t.equal(await dk.findSigningKey([c, parent], 'other.test', 14), undefined, 'another domain: nothing');
  t.equal(await dk.findSigningKey([], 'shop.test', 14), undefined);
});

contract('lockdown: allow and deny answer whether they changed anything; the sender or its parent allows', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const ld = store.lockdown;
  t.equal(await ld.allow(a, 'alpha.test', 10), true);
  t.equal(await ld.allow(a, 'alpha.test', 20), false, 'already allowed');
  t.equal(await ld.allow(a, 'beta.test', 30), true);
  t.same((await ld.list(a)).map((r) => [r.domain, r.created_at]).sort(), [['alpha.test', 10], ['beta.test', 30]], 'the first allowance\'s time stays');
  t.same(await ld.list(b), []);
  t.equal(await (await reopen()).lockdown.isAllowed([b, a], 'alpha.test'), true, 'any of the accounts');
  t.equal(await ld.isAllowed([b], 'alpha.test'), false);
  t.equal(await ld.isAllowed([], 'alpha.test'), false);
  await ld.allow(b, 'bravo.test', 40);
  const all = await ld.listAll(10);
  t.same({ alpha: [...(all.alpha ?? [])].sort(), bravo: all.bravo }, { alpha: ['alpha.test', 'beta.test'], bravo: ['bravo.test'] });
  t.equal(Object.values(await ld.listAll(2)).flat().length, 2, 'at most `limit` pairs');
  t.equal(await ld.deny(b, 'alpha.test'), false, 'never allowed for b');
  t.equal(await ld.deny(a, 'alpha.test'), true);
  t.equal(await ld.deny(a, 'alpha.test'), false);
  t.equal(await ld.isAllowed([a], 'alpha.test'), false);
  await ld.allow(a, 'aardvark.test', 50);
  t.same((await ld.list(a)).map((r) => r.domain), ['aardvark.test', 'beta.test'], 'by name, whatever the order allowed');
  t.same(await ld.listAll(2), { alpha: ['aardvark.test', 'beta.test'] }, 'the first pairs by handle, then domain');
});

contract('scan policy: the account\'s own until removed', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  t.equal(await store.senderAbuse.scanPolicy(a), undefined, 'follows the default');
  await store.senderAbuse.setScanPolicy(a, 'monitor', 1);
  await store.senderAbuse.setScanPolicy(a, 'off', 2);
  t.equal(await store.senderAbuse.scanPolicy(a), 'off', 'the last one set');
  t.equal(await store.senderAbuse.scanPolicy(b), undefined);
  await store.senderAbuse.setScanPolicy(a, null, 3);
  t.equal(await store.senderAbuse.scanPolicy(a), undefined, 'removed');
  await store.senderAbuse.setScanPolicy(b, null, 3);
  t.equal(await store.senderAbuse.scanPolicy(b), undefined, 'removing none is harmless');
});

contract('sender abuse: strikes counted from `since`, one active block, lifting forgives and records the delisting', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const sa = store.senderAbuse;
  const id = 'alpha|x-authuser|bob@alpha.test';
  await sa.insertStrike(a, id, 'confirmed', 'm1', 100);
  await sa.insertStrike(a, id, 'suspect', 'm2', 200);
  await sa.insertStrike(a, id, 'suspect', 'm3', 300);
  await sa.insertStrike(b, id, 'confirmed', 'm4', 300);
  t.same(await sa.countStrikes(a, id, 0), { confirmed: 1, suspect: 2 });
  t.same(await sa.countStrikes(a, id, 200), { confirmed: 0, suspect: 2 }, 'at or after since');
  t.same(await sa.countStrikes(a, 'alpha|x-authuser|eve@alpha.test', 0), { confirmed: 0, suspect: 0 }, 'an unknown identity counts zero');
  t.equal(await sa.findBlock(a, id), undefined, 'never blocked');

  const block = { accountId: a, senderId: id, envelopeSender: 'Bob@Alpha.test', messageId: 'm3', reason: 'three strikes', at: 400 };
  t.equal(await sa.insertBlock(block), true);
  t.equal(await sa.insertBlock({ ...block, messageId: 'm9', reason: 'again', at: 500 }), false, 'already blocked');
  t.match(await (await reopen()).senderAbuse.findBlock(a, id), { message_id: 'm3', reason: 'three strikes', blocked_at: 400, lifted_at: null, lifted_by: null }, 'the first block\'s record stays');
  t.equal(await sa.lift(b, id, 'api', 600), false, 'b never blocked it');
  t.equal(await sa.lift(a, id, 'api', 600), true);
  t.equal(await sa.lift(a, id, 'operator', 601), false, 'no longer blocked');
  t.match(await sa.findBlock(a, id), { lifted_at: 600, lifted_by: 'api' });
  t.same(await sa.countStrikes(a, id, 0), { confirmed: 0, suspect: 0 }, 'a delisted identity starts from zero');
  t.same(await sa.countStrikes(b, id, 0), { confirmed: 1, suspect: 0 }, 'another account\'s strikes stay');
  t.equal(await sa.countDelistings(a, id, 'api', 600), 1);
  t.equal(await sa.countDelistings(a, id, 'api', 601), 0, 'at or after since');
  t.equal(await sa.countDelistings(a, id, 'operator', 0), 0, 'by how it was delisted');
  t.equal(await sa.insertBlock({ ...block, reason: 'relapse', at: 700 }), true, 'a lifted identity may be blocked again');
  t.match(await sa.findBlock(a, id), { reason: 'relapse', blocked_at: 700, lifted_at: null });
});

contract('sender abuse: an API delisting counts and lifts in one unit; past the daily limit it lifts nothing', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const sa = store.senderAbuse;
  const id = 'alpha|x-authuser|bob@alpha.test';
  const block = (at: number) => sa.insertBlock({ accountId: a, senderId: id, envelopeSender: 'bob@alpha.test', messageId: `m${at}`, reason: 'r', at });
  const max2 = (since: number) => ({ max: 2, since });
  t.same(await sa.delist(a, id, 10, max2(0)), { ok: false, reason: 'not-blocked' }, 'never blocked');
  await sa.insertStrike(a, id, 'suspect', 's1', 90);
  await block(100);
  t.same(await sa.delist(a, id, 110, max2(0)), { ok: true });
  t.match(await sa.findBlock(a, id), { lifted_at: 110, lifted_by: 'api' });
  t.same(await sa.countStrikes(a, id, 0), { confirmed: 0, suspect: 0 }, 'forgiven, as by lift');
  t.same(await sa.delist(a, id, 120, max2(0)), { ok: false, reason: 'not-blocked' }, 'lifted already');
  await block(200);
  t.equal(await sa.lift(a, id, 'operator', 210), true);
  await block(300);
  t.same(await (await reopen()).senderAbuse.delist(a, id, 310, max2(0)), { ok: true }, 'the operator\'s delisting does not count; another process\'s does');
  await block(400);
  t.same(await sa.delist(a, id, 410, max2(0)), { ok: false, reason: 'rate-limited', used: 2 });
  t.match(await sa.findBlock(a, id), { blocked_at: 400, lifted_at: null }, 'the refused delisting lifted nothing');
  t.equal(await sa.countDelistings(a, id, 'api', 0), 2, 'nor recorded one');
  t.same(await sa.delist(a, id, 420, max2(111)), { ok: true }, 'a window that starts after the first: one used');
});

contract('sender abuse: active blocks newest first, found by envelope sender, identity or its user; listing; pruning', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const sa = store.senderAbuse;
  const blockOf = (accountId: number, senderId: string, envelopeSender: string, at: number) =>
    sa.insertBlock({ accountId, senderId, envelopeSender, messageId: `m${at}`, reason: 'r', at });
  await blockOf(a, 'alpha|x-authuser|bob@alpha.test', 'bounce+1@alpha.test', 10);
  await blockOf(a, 'alpha|x-authuser|carol@alpha.test', 'carol@alpha.test', 20);
  await blockOf(a, 'alpha|api|key1', 'News@Alpha.test', 30);
  await blockOf(b, 'bravo|x-authuser|bob@alpha.test', 'bob@alpha.test', 40);
  await sa.lift(a, 'alpha|x-authuser|carol@alpha.test', 'operator', 50);
  t.same((await sa.activeBlocks([a])).map((r) => r.blocked_at), [30, 10], 'active only, newest first');
  t.same((await sa.activeBlocks([a, b])).map((r) => r.blocked_at).sort(), [10, 30, 40]);
  const forSender = async (ids: number[], s: string) => (await sa.activeBlocksFor(ids, s)).map((r) => r.sender_id);
  t.same(await forSender([a], 'news@alpha.test'), ['alpha|api|key1'], 'the recorded envelope sender, ASCII case ignored');
  t.same(await forSender([a], 'alpha|api|key1'), ['alpha|api|key1'], 'the identity itself');
  t.same(await forSender([a], 'Bob@alpha.test'), ['alpha|x-authuser|bob@alpha.test'], 'the identity whose user is that address');
  t.same(await forSender([a], 'carol@alpha.test'), [], 'a lifted block names nothing');
  t.same(await forSender([a], 'b_b@alpha.test'), [], 'no wildcard in the address');
  t.same(await forSender([b], 'bounce+1@alpha.test'), [], 'scoped by account');
  t.same((await sa.listBlocks({ accountId: a, all: false, limit: 10 })).map((r) => r.blocked_at), [30, 10]);
  t.same((await sa.listBlocks({ accountId: a, all: true, limit: 10 })).map((r) => r.blocked_at), [30, 20, 10], 'with the lifted ones');
  t.same((await sa.listBlocks({ accountId: null, all: false, limit: 2 })).map((r) => r.blocked_at), [40, 30], 'every account, limited');

  const id = 'bravo|x-authuser|dan@bravo.test';
  for (const at of [100, 200, 300]) await sa.insertStrike(b, id, 'suspect', `s${at}`, at);
  await sa.insertBlock({ accountId: b, senderId: id, envelopeSender: 'dan@bravo.test', messageId: 'x', reason: 'r', at: 310 });
  await sa.lift(b, id, 'api', 150); // a delisting at 150
  for (const at of [100, 200]) await sa.insertStrike(b, id, 'suspect', `t${at}`, at);
  t.equal(await sa.prune(200, 1), 1, 'at most `limit`');
  t.equal(await sa.prune(200, 10), 2, 'the delistings at 50 and 150; the strike at 200 is not older than the cutoff');
  t.equal(await sa.prune(200, 10), 0);
  t.same(await sa.countStrikes(b, id, 0), { confirmed: 0, suspect: 1 });
  t.equal(await sa.countDelistings(b, id, 'api', 0), 0);
  t.ok(await sa.findBlock(b, id), 'blocks are not strikes: pruning keeps them');
});
