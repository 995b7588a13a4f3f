// Holds the classifier's model port (storage/ports/bayes.ts) on every backend: learning once, relearning as the other
// class, global and account models summed but accounts kept apart, the shared version, reset.
import { account, contract } from './backends.js';

contract('bayes: a message is learned once; learned as the other class it moves; totals and version follow', async (t, { store, reopen }) => {
  const bayes = store.bayes;
  t.same(await bayes.stats(null), { learned: { spam: 0, ham: 0 }, tokens: 0, version: 0, updatedAt: null, tokenizer: 1 }, 'global model starts empty');
  const m1 = { digest: 'd1', cls: 'spam' as const, tokens: ['B:cheap', 'B:pills', 'S:offer'] };
  const m2 = { digest: 'd2', cls: 'ham' as const, tokens: ['B:meeting', 'B:cheap'] };
  t.same(await bayes.learn(null, [m1, m2], 1000), ['learned', 'learned']);
  t.same(await bayes.learn(null, [m1], 2000), ['already'], 'the same message as the same class is not counted twice');
  const other = (await reopen()).bayes;
  let stats = await other.stats(null);
  t.same(stats.learned, { spam: 1, ham: 1 }, 'another process sees the learn at once');
  t.equal(stats.tokens, 4);
  t.equal(stats.version, 1, 'a learn that changed nothing leaves the version');
  t.equal(stats.updatedAt, 1000);
  let c = await other.counts([null], ['B:cheap', 'B:pills', 'B:unknown']);
  t.same(c.learned, { spam: 1, ham: 1 });
  t.same(c.tokens.get('B:cheap'), { spam: 1, ham: 1 });
  t.same(c.tokens.get('B:pills'), { spam: 1, ham: 0 });
  t.notOk(c.tokens.has('B:unknown'), 'unseen tokens are absent');

  t.same(await other.learn(null, [{ ...m1, cls: 'ham' }], 3000), ['relearned'], 'a false positive reported later moves it');
  stats = await bayes.stats(null);
  t.same(stats.learned, { spam: 0, ham: 2 });
  t.equal(stats.version, 2, 'one version shared by every process');
  t.equal(stats.updatedAt, 3000);
  c = await bayes.counts([null], ['B:cheap', 'B:pills']);
  t.same(c.tokens.get('B:cheap'), { spam: 0, ham: 2 });
  t.same(c.tokens.get('B:pills'), { spam: 0, ham: 1 });
  t.same(await bayes.learn(null, [], 4000), [], 'an empty learn');
  t.equal((await bayes.stats(null)).version, 2, 'changes nothing');
  const twice = { digest: 'd9', cls: 'spam' as const, tokens: ['B:twice'] };
  t.same(await bayes.learn(null, [twice, twice, { ...twice, cls: 'ham' }], 5000), ['learned', 'already', 'relearned'], 'items of one call in order');
  t.same((await bayes.counts([null], ['B:twice'])).tokens.get('B:twice'), { spam: 0, ham: 1 });
  t.equal((await bayes.stats(null)).version, 3, 'one learn, one version');
});

contract('bayes: account models add to the global one and never to another account', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const other = await account(store, 'other');
  const bayes = store.bayes;
  await bayes.learn(null, [{ digest: 'g', cls: 'spam', tokens: ['B:win'] }], 1);
  await bayes.learn(acme, [{ digest: 'a', cls: 'ham', tokens: ['B:win', 'B:invoice'] }], 2);
  const both = await bayes.counts([null, acme], ['B:win', 'B:invoice']);
  t.same(both.learned, { spam: 1, ham: 1 });
  t.same(both.tokens.get('B:win'), { spam: 1, ham: 1 });
  const theirs = await bayes.counts([null, other], ['B:win', 'B:invoice']);
  t.same(theirs.learned, { spam: 1, ham: 0 }, 'another account sees the global model only');
  t.notOk(theirs.tokens.has('B:invoice'));
  t.same((await bayes.stats(acme)).learned, { spam: 0, ham: 1 });
  t.same((await bayes.stats(other)).learned, { spam: 0, ham: 0 }, 'an account that never learned has an empty model');
  t.same(await bayes.learn(acme, [{ digest: 'g', cls: 'ham', tokens: ['B:win'] }], 3), ['learned'], 'digests are per model');

  await bayes.reset(acme, 5);
  t.same((await bayes.counts([null, acme], ['B:win'])).tokens.get('B:win'), { spam: 1, ham: 0 }, 'reset forgets the account model only');
  t.same((await bayes.stats(acme)).learned, { spam: 0, ham: 0 });
  t.same(await bayes.learn(acme, [{ digest: 'a', cls: 'ham', tokens: ['B:win'] }], 6), ['learned'], 'and its learned digests');
  t.same((await bayes.stats(null)).learned, { spam: 1, ham: 0 }, 'the global model is untouched');
});

/** `n` distinct tokens named `prefix:i`. */
const tokens = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `B:${prefix}${i}`);

contract('bayes: a model holds at most maxTokens; the rarest, then the least recently learned, go first; other models untouched', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const other = await account(store, 'other');
  const bayes = store.bayes;
  await bayes.learn(other, [{ digest: 'o', cls: 'spam', tokens: tokens('o', 50) }], 1, 40);
  t.equal((await bayes.stats(other)).tokens, 40, 'one learn past the cap is cut to it');
  await bayes.learn(acme, [{ digest: 'old', cls: 'spam', tokens: tokens('old', 30) }], 10, 50);
  await bayes.learn(acme, [{ digest: 'mid', cls: 'ham', tokens: tokens('mid', 30) }], 20, 50);
  t.equal((await bayes.stats(acme)).tokens, 50, 'the bound holds');
  const after = await bayes.counts([acme], [...tokens('old', 30), ...tokens('mid', 30)]);
  t.equal([...after.tokens.keys()].filter((k) => k.startsWith('B:mid')).length, 30, 'the newest are all kept');
  t.equal([...after.tokens.keys()].filter((k) => k.startsWith('B:old')).length, 20, 'ten of the oldest went');
  // Relearning an old token refreshes it: the next overflow takes others.
  await bayes.learn(acme, [{ digest: 'again', cls: 'spam', tokens: ['B:old29', ...tokens('new', 10)] }], 30, 50);
  t.equal((await bayes.stats(acme)).tokens, 50);
  t.ok((await bayes.counts([acme], ['B:old29'])).tokens.has('B:old29'), 'a token learned again is recent');
  t.equal((await bayes.stats(other)).tokens, 40, 'another model is not touched');
  t.same((await bayes.stats(acme)).learned, { spam: 2, ham: 1 }, 'learned totals are not changed by forgetting tokens');
});

contract('bayes: past the cap, tokens counted in more messages outlive newer ones counted once', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const bayes = store.bayes;
  // Two old messages share five tokens (counted twice); newer mail brings tokens counted once, past the cap.
  await bayes.learn(acme, [{ digest: 'a', cls: 'ham', tokens: [...tokens('freq', 5), ...tokens('a', 5)] }], 1, 30);
  await bayes.learn(acme, [{ digest: 'b', cls: 'ham', tokens: [...tokens('freq', 5), ...tokens('b', 5)] }], 2, 30);
  await bayes.learn(acme, [{ digest: 'c', cls: 'spam', tokens: tokens('c', 20) }], 3, 30);
  t.equal((await bayes.stats(acme)).tokens, 30, 'the bound holds');
  const kept = (await bayes.counts([acme], [...tokens('freq', 5), ...tokens('a', 5), ...tokens('b', 5), ...tokens('c', 20)])).tokens;
  t.same(tokens('freq', 5).map((k) => kept.get(k)), Array(5).fill({ spam: 0, ham: 2 }), 'the oldest tokens, counted twice, are all kept');
  t.equal(tokens('c', 20).filter((k) => kept.has(k)).length, 20, 'the newest, counted once, are kept');
  t.equal([...tokens('a', 5), ...tokens('b', 5)].filter((k) => kept.has(k)).length, 5, 'five of the older ones counted once went, oldest first');
  t.equal(tokens('a', 5).filter((k) => kept.has(k)).length, 0);
});

contract('bayes: retention forgets rare old tokens in batches over every model, and old learned-message records', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const bayes = store.bayes;
  // Global: 5 tokens seen once at t=10, 'B:common' seen twice. Acme: 4 tokens seen once at t=10, 3 more at t=100.
  await bayes.learn(null, [{ digest: 'g1', cls: 'spam', tokens: [...tokens('g', 5), 'B:common'] }], 10);
  await bayes.learn(null, [{ digest: 'g2', cls: 'spam', tokens: ['B:common'] }], 10);
  await bayes.learn(acme, [{ digest: 'a1', cls: 'ham', tokens: tokens('a', 4) }], 10);
  await bayes.learn(acme, [{ digest: 'a2', cls: 'ham', tokens: tokens('fresh', 3) }], 100);
  let afterId = 0;
  let deleted = 0;
  let batches = 0;
  for (;;) {
    const r = await bayes.pruneRareTokens({ before: 50, afterId, limit: 3 });
    t.ok(r.deleted <= 3, 'a batch deletes at most its limit');
    deleted += r.deleted;
    afterId = r.lastId;
    batches++;
    if (r.done || batches > 20) break;
  }
  t.equal(deleted, 9, 'the 5 + 4 rare old tokens went');
  t.ok(batches >= 3, `in ${batches} batches`);
  t.equal((await bayes.stats(null)).tokens, 1, 'a token seen in two messages stays');
  t.equal((await bayes.stats(acme)).tokens, 3, 'recently learned tokens stay');
  t.equal((await bayes.pruneRareTokens({ before: 50, afterId: 0, limit: 3 })).deleted, 0, 'a second walk finds nothing');
  // The model's count followed: the cap still sees the truth (3 + 48 > 50 forgets exactly one).
  await bayes.learn(acme, [{ digest: 'a3', cls: 'ham', tokens: tokens('more', 48) }], 200, 50);
  t.equal((await bayes.stats(acme)).tokens, 50);

  t.equal(await bayes.pruneLearned(50, 2), 2, 'learned records before the cutoff, at most the limit');
  t.equal(await bayes.pruneLearned(50, 2), 1);
  t.equal(await bayes.pruneLearned(50, 2), 0);
  t.same(await bayes.learn(acme, [{ digest: 'a1', cls: 'ham', tokens: tokens('a', 1) }], 300), ['learned'], 'a forgotten message counts again');
  t.same(await bayes.learn(acme, [{ digest: 'a2', cls: 'ham', tokens: tokens('fresh', 1) }], 300), ['already'], 'a recent one is still known');
});

contract('bayes: a correction moves what a model learned and learns nothing it did not', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const bayes = store.bayes;
  const x = { digest: 'x', cls: 'spam' as const, tokens: ['B:watch', 'B:replica'] };
  await bayes.learn(null, [x], 10);
  const y = { digest: 'y', cls: 'ham' as const, tokens: ['B:lunch'] };
  t.same(await bayes.correct(null, [{ ...x, cls: 'ham' }, y, { ...x, cls: 'ham' }], 20), ['relearned', 'unknown', 'already']);
  t.same((await bayes.stats(null)).learned, { spam: 0, ham: 1 }, 'moved, and the unknown one not learned');
  t.same((await bayes.counts([null], ['B:watch', 'B:lunch'])).tokens, new Map([['B:watch', { spam: 0, ham: 1 }]]));
  t.same(await bayes.correct(acme, [x], 30), ['unknown'], 'a model never learned: nothing');
  t.same((await bayes.stats(acme)).learned, { spam: 0, ham: 0 });
  t.same(await bayes.correct(null, [{ ...x, cls: 'ham' }], 40), ['already']);
});

contract('bayes: a model learned with another tokeniser is left out of the counts and starts again at its next learn', async (t, { store, reopen }) => {
  const bayes = store.bayes;
  const acct = await account(store, 'acme');
  const old = [
    { digest: 'o1', cls: 'spam' as const, tokens: ['B:cheap', 'B:pills'] },
    { digest: 'o2', cls: 'ham' as const, tokens: ['B:meeting'] },
  ];
  // Learned without a version (as before versions were recorded): tokeniser 1.
  await bayes.learn(null, old, 1000);
  await bayes.learn(acct, [{ digest: 'a1', cls: 'spam', tokens: ['B:cheap'] }], 1000, undefined, 2);
  t.equal((await bayes.stats(null)).tokenizer, 1, 'the global model: tokeniser 1');
  t.equal((await bayes.stats(acct)).tokenizer, 2, "the account's: the one it was learned with");

  const asOne = await bayes.counts([null, acct], ['B:cheap'], 1);
  t.same(asOne.learned, { spam: 1, ham: 1 }, 'judged with tokeniser 1: only the global model counts');
  t.same(asOne.tokens.get('B:cheap'), { spam: 1, ham: 0 });
  t.equal(asOne.outdated, 1, "the account's model is outdated for it");
  const asTwo = await (await reopen()).bayes.counts([null, acct], ['B:cheap', 'B:pills'], 2);
  t.same(asTwo.learned, { spam: 1, ham: 0 }, 'judged with tokeniser 2: only the account model counts');
  t.same(asTwo.tokens.get('B:cheap'), { spam: 1, ham: 0 });
  t.notOk(asTwo.tokens.has('B:pills'), "the global model's tokens are not read");
  t.equal(asTwo.outdated, 1);

  // The next learn with tokeniser 2 starts the global model again, in its own commit.
  t.same(await bayes.learn(null, [{ digest: 'n1', cls: 'ham', tokens: ['B:agenda'] }, old[0]!], 2000, undefined, 2), ['learned', 'learned'], 'what it knew is forgotten: the old spam is new again');
  const now = await bayes.stats(null);
  t.same([now.learned, now.tokens, now.tokenizer], [{ spam: 1, ham: 1 }, 3, 2], 'only the messages learned with tokeniser 2');
  t.equal((await bayes.counts([null], ['B:meeting'], 2)).tokens.has('B:meeting'), false, 'an old-only token is gone');
  t.equal((await bayes.counts([null], [], 1)).outdated, 1, 'and now it is the one outdated for tokeniser 1');

  // A correction keeps the model's tokeniser; a reset clears it, and an empty model is nobody's outdated one.
  t.same(await bayes.correct(null, [{ ...old[0]!, cls: 'ham' }], 3000), ['relearned']);
  t.equal((await bayes.stats(null)).tokenizer, 2);
  await bayes.reset(null, 4000);
  t.equal((await bayes.stats(null)).tokenizer, 1, 'reset: back to the default');
  t.equal((await bayes.counts([null], [], 2)).outdated, 0, 'an empty model is not outdated');
});
