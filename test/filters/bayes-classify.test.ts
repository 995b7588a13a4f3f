// Checks the classifier over a real (SQLite) model store: a model too little trained abstains without the message
// being tokenised, and once trained the classifier judges exactly as a fresh one does.
import t from 'tap';
import { createBayesClassifier, learnItem } from '../../filters/bayes.js';
import { tokenizeMessage, TOKENIZER_VERSION } from '../../filters/bayes-tokens.js';
import { createSqliteBayesStore } from '../../storage/sqlite/bayes.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { tempDir } from '../helpers/stack.js';

const mail = (subject: string, body: string) => Buffer.from(`From: a@src.test\r\nTo: b@dst.test\r\nSubject: ${subject}\r\n\r\n${body}\r\n`);
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo'];
// Each message a word of its own in the subject: learned messages are told apart by their tokens.
const spam = (i: number) => mail(`cheap pills ${WORDS[i]}`, 'buy cheap pills now, limited offer, click here');
const ham = (i: number) => mail(`minutes ${WORDS[i]}`, 'the minutes of the project meeting are attached for review');

t.test('an untrained model abstains without tokenising; trained, the verdicts are a fresh classifier\'s', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const store = createSqliteBayesStore(db);
  let tokenised = 0;
  const counted = (raw: Buffer) => (tokenised++, tokenizeMessage(raw));
  const bayes = createBayesClassifier({ store, minLearned: 2, maxTokens: 10_000, tokenize: counted });

  const first = await bayes.classify(spam(0), [null]);
  t.same(first, [{ abstained: true, reason: 'too-few-learned', learned: { spam: 0, ham: 0 } }]);
  t.equal(tokenised, 1, 'the first message is tokenised (nothing known of the model yet)');
  t.same(await bayes.classify(spam(1), [null]), first);
  t.equal(tokenised, 1, 'a model that abstained: the next message is not tokenised');
  const none = [0, 1].map(() => ({ abstained: true, reason: 'too-few-learned', learned: { spam: 0, ham: 0 } }));
  t.same(await bayes.classify(spam(1), [null, 7]), none);
  t.equal(tokenised, 2, 'an account not judged before: tokenised');
  t.same(await bayes.classify(spam(1), [null, 7]), none);
  t.equal(tokenised, 2, 'both abstained before: not tokenised');

  await bayes.learn(null, [learnItem(spam(2), 'spam'), learnItem(spam(3), 'spam'), learnItem(ham(4), 'ham')], 1000);
  t.same((await bayes.classify(spam(5), [null]))[0], { abstained: true, reason: 'too-few-learned', learned: { spam: 2, ham: 1 } }, 'one class short');
  t.equal(tokenised, 2);

  await bayes.learn(null, [learnItem(ham(6), 'ham')], 2000);
  const fresh = createBayesClassifier({ store, minLearned: 2, maxTokens: 10_000 });
  for (const [name, raw] of [['spam', spam(7)], ['ham', ham(8)]] as const) {
    const judged = await bayes.classify(raw, [null, 7]);
    t.same(judged, await fresh.classify(raw, [null, 7]), `${name}: the same verdicts as a classifier without hints`);
    t.equal(judged[0]?.abstained, false, `${name}: judged once trained`);
  }
  t.equal(tokenised, 4, 'trained: each message tokenised once for every account');
  const [s, h] = [(await bayes.classify(spam(9), [null]))[0], (await bayes.classify(ham(10), [null]))[0]];
  t.ok(s && !s.abstained && h && !h.abstained && s.probability > h.probability, 'spam scores above ham');
});

t.test('a message is prepared for learning with the classifier\'s own tokeniser, once for every model it goes to', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const store = createSqliteBayesStore(db);
  let tokenised = 0;
  const bayes = createBayesClassifier({ store, minLearned: 1, maxTokens: 10_000, tokenize: (raw) => (tokenised++, tokenizeMessage(raw)) });
  const item = await bayes.prepare(spam(0), 'spam');
  t.same(item, learnItem(spam(0), 'spam'), 'the same item (digest, class, tokens) as learnItem makes');
  t.same(await bayes.learn(null, [item], 1000), ['learned']);
  t.same(await bayes.learn(null, [item], 1000), ['already'], 'the same message: the same digest');
  t.same(await bayes.correct(null, [{ ...item, cls: 'ham' }], 2000), ['relearned'], 'the record moved with the same item');
  t.equal(tokenised, 1, 'tokenised once for every learn and the correction');
});

t.test('after a change of tokeniser the old model is not used (the verdict says why) and the next learn starts it again', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const store = createSqliteBayesStore(db);
  const before = createBayesClassifier({ store, minLearned: 2, maxTokens: 10_000 });
  await before.learn(null, [spam(0), spam(1)].map((m) => learnItem(m, 'spam')).concat([ham(2), ham(3)].map((m) => learnItem(m, 'ham'))), 1000);
  t.equal((await before.classify(spam(4), [null]))[0]!.abstained, false, 'trained: it judges');

  // The same store, a classifier whose tokeniser is a version on (as after an upgrade that changed it).
  const after = createBayesClassifier({ store, minLearned: 2, maxTokens: 10_000, tokenizerVersion: TOKENIZER_VERSION + 1 });
  t.same(await after.classify(spam(4), [null]), [{ abstained: true, reason: 'tokenizer-changed', learned: { spam: 0, ham: 0 } }]);
  t.same(await after.classify(spam(5), [null]), [{ abstained: true, reason: 'tokenizer-changed', learned: { spam: 0, ham: 0 } }], 'the abstention hint keeps the reason');
  await after.learn(null, [learnItem(spam(6), 'spam')], 2000);
  t.same((await store.stats(null)).learned, { spam: 1, ham: 0 }, 'its first learn forgot the old messages');
  t.equal((await store.stats(null)).tokenizer, TOKENIZER_VERSION + 1);
  t.same(await after.classify(spam(4), [null]), [{ abstained: true, reason: 'too-few-learned', learned: { spam: 1, ham: 0 } }], 'then too few, as any new model');
  t.same(await before.classify(spam(4), [null]), [{ abstained: true, reason: 'tokenizer-changed', learned: { spam: 0, ham: 0 } }], 'and the old version no longer reads it');
});
