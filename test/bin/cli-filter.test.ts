// Checks `sluice filter train`'s reading (issue 31 finding 8): a directory is read a message at a time while learning
// goes on, not all at once first; mbox files are cut as before (RFC 4155, mboxrd unquoting), streamed.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { filterCommand, readMessages, splitMbox } from '../../bin/cli-filter.js';
import { TOKENIZER_VERSION } from '../../filters/bayes-tokens.js';
import { openStore } from '../../storage/open.js';
import type { BayesStore } from '../../storage/ports/bayes.js';
import { tempDir } from '../helpers/stack.js';

const io = (out: string[]) => ({ stdout: (s: string) => void out.push(s), stderr: (s: string) => void out.push(s), env: {}, cwd: '/' });
const message = (words: string) => `From: a@x.test\r\nTo: b@y.test\r\nSubject: note\r\n\r\n${words}\r\n`;

t.test('a directory is read while learning goes on: files rewritten during the first learn are read as rewritten', async (t) => {
  const dir = tempDir(t);
  const store = await openStore({ dataDir: tempDir(t) }, { now: () => 1_000 });
  t.teardown(() => store.close());
  // 205 files, one more batch than a commit holds (200), all the same message: learned once, known 204 times.
  const files = Array.from({ length: 205 }, (_, i) => path.join(dir, `m${String(i).padStart(3, '0')}.eml`));
  for (const f of files) fs.writeFileSync(f, message('cheap pills offer now'));
  let calls = 0;
  const spied: BayesStore = {
    ...store.bayes,
    stats: (s) => store.bayes.stats(s),
    reset: (s, n) => store.bayes.reset(s, n),
    async learn(scope, items, now) {
      // At the first commit every file becomes a message of its own: a trainer that had read every file before
      // learning never sees them; one that reads a message at a time learns the files it had not read yet.
      if (calls++ === 0) files.forEach((f, i) => fs.writeFileSync(f, message(`unique word${i} token${i * 7}`)));
      return store.bayes.learn(scope, items, now);
    },
  };
  const out: string[] = [];
  const deps = { store: spied, minLearned: 1, maxTokens: 150_000 };
  t.equal(await filterCommand('train', { spam: [dir], json: true }, store.accounts, deps, io(out), () => 1_000), 0);
  const report = JSON.parse(out.join('')) as { trained: { spam: { learned: number; already: number } } };
  t.equal(calls, 2, 'two commits: 200 messages, then 5');
  t.equal(report.trained.spam.learned + report.trained.spam.already, 205, 'every file learned once');
  t.equal(report.trained.spam.learned, 6, 'the first 200 read before the first commit (one message), the last 5 after it');
});

t.test('readMessages yields one message at a time and cuts an mbox as splitMbox does', async (t) => {
  const dir = tempDir(t);
  const mbox = [
    'From a@x.test Mon Jan  1 00:00:00 2026\n',
    'Subject: one\n\nbody\n>From the start\n>>From deeper\n\n',
    'From b@x.test Mon Jan  1 00:00:01 2026\r\n',
    'Subject: two\r\n\r\nfirst line\r\nFrom inside a paragraph stays\r\n\r\n',
    'From c@x.test Mon Jan  1 00:00:02 2026\n',
    'Subject: three\n\nlast line without newline',
  ].join('');
  fs.writeFileSync(path.join(dir, 'box.mbox'), mbox);
  fs.writeFileSync(path.join(dir, '.hidden'), message('hidden'));
  fs.mkdirSync(path.join(dir, 'cur'));
  fs.writeFileSync(path.join(dir, 'cur', 'one.eml'), message('single'));
  fs.writeFileSync(path.join(dir, 'cur', 'empty.eml'), '');
  const got: string[] = [];
  for await (const m of readMessages(path.join(dir, 'box.mbox'))) got.push(m.toString('latin1'));
  t.same(got, splitMbox(Buffer.from(mbox, 'latin1')).map((b) => b.toString('latin1')), 'the same cut as the whole-file splitter');
  t.equal(got.length, 3);
  t.match(got[0], /^Subject: one\n\nbody\nFrom the start\n>From deeper\n\n$/);
  t.match(got[1], /From inside a paragraph stays/);
  const all: string[] = [];
  for await (const m of readMessages(dir)) all.push(m.toString('latin1'));
  t.equal(all.length, 4, 'three from the mbox, one .eml; dot files and empty files skipped');
  t.ok(all.some((m) => m.includes('single')));
  t.notOk(all.some((m) => m.includes('hidden')));
});

t.test('stats and train say when a model was learned with another tokeniser; training starts it again', async (t) => {
  const dir = tempDir(t);
  const store = await openStore({ dataDir: tempDir(t) }, { now: () => 1_000 });
  t.teardown(() => store.close());
  // A model learned with a tokeniser before this version's.
  await store.bayes.learn(null, [{ digest: 'old', cls: 'spam', tokens: ['B:old'] }], 1_000, undefined, TOKENIZER_VERSION - 1);
  const deps = { store: store.bayes, minLearned: 1, maxTokens: 150_000 };
  const out: string[] = [];
  t.equal(await filterCommand('stats', {}, store.accounts, deps, io(out), () => 1_000), 0);
  t.match(out.join(''), `learned with tokeniser ${TOKENIZER_VERSION - 1}; this version's is ${TOKENIZER_VERSION}, so it is not used: train it again`);
  out.length = 0;
  t.equal(await filterCommand('stats', { json: true }, store.accounts, deps, io(out), () => 1_000), 0);
  t.match(JSON.parse(out.join('')), { tokenizer: TOKENIZER_VERSION - 1, outdated: true });

  fs.writeFileSync(path.join(dir, 'a.eml'), message('cheap pills offer now'));
  out.length = 0;
  t.equal(await filterCommand('train', { spam: [dir] }, store.accounts, deps, io(out), () => 2_000), 0);
  t.match(out.join(''), `the global model held 1 spam and 0 ham learned with tokeniser ${TOKENIZER_VERSION - 1}; this version's is ${TOKENIZER_VERSION}: it starts again`);
  t.match(await store.bayes.stats(null), { learned: { spam: 1, ham: 0 }, tokenizer: TOKENIZER_VERSION }, 'only the new message, with this tokeniser');
  out.length = 0;
  t.equal(await filterCommand('stats', {}, store.accounts, deps, io(out), () => 2_000), 0);
  t.match(out.join(''), 'model: 1 spam, 0 ham');
  t.notMatch(out.join(''), 'not used');
});
