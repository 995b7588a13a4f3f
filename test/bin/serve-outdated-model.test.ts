// Checks that `sluice serve` says at start when the global classifier model was learned with another tokeniser
// (filters/bayes-tokens.ts TOKENIZER_VERSION), and says nothing of the kind about a model learned with this one.
import t from 'tap';
import { TOKENIZER_VERSION } from '../../filters/bayes-tokens.js';
import { openStore } from '../../storage/open.js';
import { serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

const WARNING = /the global classifier model was learned with tokeniser/;

async function learned(dataDir: string, tokenizer: number): Promise<void> {
  const store = await openStore({ dataDir }, { now: () => 1_000 });
  try {
    await store.bayes.learn(null, [{ digest: 'd', cls: 'spam', tokens: ['B:cheap'] }], 1_000, undefined, tokenizer);
  } finally {
    await store.close();
  }
}

t.test('a model of another tokeniser: one warning at start naming both versions and what to run', async (t) => {
  const dir = tempDir(t);
  await learned(dir, TOKENIZER_VERSION - 1);
  const server = serveBinary(t, dir, {});
  await server.listening;
  const warned = server.lines.filter((l) => WARNING.test(l.msg));
  t.equal(warned.length, 1);
  t.match(warned[0], { level: 40, model_tokenizer: TOKENIZER_VERSION - 1, tokenizer: TOKENIZER_VERSION, learned: { spam: 1, ham: 0 } });
  t.match(warned[0].msg, 'sluice filter reset, then sluice filter train');
});

t.test("a model of this version's tokeniser: no warning", async (t) => {
  const dir = tempDir(t);
  await learned(dir, TOKENIZER_VERSION);
  const server = serveBinary(t, dir, {});
  await server.listening;
  t.ok(server.lines.length > 0, 'start-up lines were read');
  t.equal(server.lines.filter((l) => WARNING.test(l.msg)).length, 0);
});
