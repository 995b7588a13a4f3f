// The classifier's own learning (mta/inbound/autolearn.ts) on a real SQLite store: into the account's model and the global one,
// at most filters.bayes.autolearn_per_hour per account per clock hour, counted in /metrics.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { createBayesClassifier } from '../../../filters/bayes.js';
import { createAutolearner } from '../../../mta/inbound/autolearn.js';
import { createMetrics } from '../../../mta/metrics.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';

const msg = (i: number) => Buffer.from(`From: <a@b.test>\r\nSubject: offer ${['alpha', 'bravo', 'charlie', 'delta'][i]}\r\n\r\nwords of message ${['one', 'two', 'three', 'four'][i]}\r\n`);

t.test('learns into the account model and the global one, bounded per account per hour, counted', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-autolearn-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let now = Date.UTC(2026, 10, 28, 10, 59, 0);
  const store = openSqliteStore(dir, { now: () => now });
  t.teardown(() => store.close());
  const account = async (handle: string) => {
    const r = await store.accounts.createAccount({ handle, companyName: null, parentId: null, now });
    if (!r.ok) throw new Error(handle);
    return r.value.id;
  };
  const [acme, other] = [await account('acme'), await account('other')];
  const metrics = createMetrics();
  const bayes = createBayesClassifier({ store: store.bayes, minLearned: 1, maxTokens: 150_000 });
  const learner = createAutolearner({ bayes, perHour: 2, now: () => now, logger: pino({ level: 'silent' }), metrics });
  await learner.learn(acme, 'spam', msg(0));
  await learner.learn(acme, 'spam', msg(0));
  await learner.learn(acme, 'spam', msg(1));
  await learner.learn(other, 'ham', msg(2));
  t.same((await store.bayes.stats(acme)).learned, { spam: 1, ham: 0 }, 'the same message counts once; the third learn was over the bound');
  t.same((await store.bayes.stats(other)).learned, { spam: 0, ham: 1 }, 'each account has its own bound');
  t.same((await store.bayes.stats(null)).learned, { spam: 1, ham: 1 }, 'the global model learned both accounts\' certain mail');
  now += 60_000; // the clock hour turns
  await learner.learn(acme, 'spam', msg(1));
  t.same((await store.bayes.stats(acme)).learned, { spam: 2, ham: 0 });
  t.same((await store.bayes.stats(null)).learned, { spam: 2, ham: 1 });
  const text = await metrics.registry.metrics();
  t.match(text, /sluice_bayes_autolearned_total\{class="spam",outcome="learned"\} 2/);
  t.match(text, /sluice_bayes_autolearned_total\{class="spam",outcome="already"\} 1/);
  t.match(text, /sluice_bayes_autolearned_total\{class="spam",outcome="over_hourly_bound"\} 1/);
  t.match(text, /sluice_bayes_autolearned_total\{class="ham",outcome="learned"\} 1/);
});
