// Owns the SQLite implementation of the classifier's models (storage/ports/bayes.ts): bayes_models, bayes_tokens,
// bayes_learned (migration 16; seen_at, the token count and the expiry indexes: migration 20).
import { EXCESS_PER_LEARN, tokenHash } from '../bayes-tokens.js';
import type { Db } from './database.js';
import { direct, type Sync } from './sync-repo.js';
import { DEFAULT_MAX_TOKENS, FIRST_TOKENIZER, type BayesCounts, type CorrectOutcome, type BayesModelStats, type BayesScope, type BayesStore, type BayesTotals, type LearnItem, type LearnOutcome } from '../ports/bayes.js';

/** The classifier's models in the SQLite database `db`, called directly on it (tests, benches). */
export function createSqliteBayesStore(db: Db): BayesStore {
  return direct<BayesStore>(createSqliteBayesRepo(db));
}

/** The classifier's models as a synchronous repository: the store runs its writes through group commit. */
export function createSqliteBayesRepo(db: Db): Sync<BayesStore> {
  const s = {
    globalModel: db.prepare('SELECT id FROM bayes_models WHERE account_id IS NULL'),
    accountModel: db.prepare('SELECT id FROM bayes_models WHERE account_id = ?'),
    createModel: db.prepare('INSERT INTO bayes_models (account_id) VALUES (?) ON CONFLICT (account_id) DO NOTHING RETURNING id'),
    model: db.prepare(`SELECT spam, ham, version, updated_at, coalesce(tokenizer, ${FIRST_TOKENIZER}) AS tokenizer FROM bayes_models WHERE id = ?`),
    setTokenizer: db.prepare('UPDATE bayes_models SET tokenizer = ? WHERE id = ?'),
    seen: db.prepare('SELECT class FROM bayes_learned WHERE model_id = ? AND digest = ?'),
    markSeen: db.prepare(
      `INSERT INTO bayes_learned (model_id, digest, class, learned_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (model_id, digest) DO UPDATE SET class = excluded.class, learned_at = excluded.learned_at`,
    ),
    // One statement per message (the tokens as a JSON array): SQLite loops in C, several times faster than a row each.
    // `WHERE true` lets the upsert follow a SELECT (sqlite.org/lang_upsert.html, parsing ambiguity).
    addSpam: db.prepare(
      `INSERT INTO bayes_tokens (model_id, seen_at, token, spam) SELECT ?, ?, value, 1 FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET spam = spam + 1, seen_at = excluded.seen_at`,
    ),
    addHam: db.prepare(
      `INSERT INTO bayes_tokens (model_id, seen_at, token, ham) SELECT ?, ?, value, 1 FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET ham = ham + 1, seen_at = excluded.seen_at`,
    ),
    // How many of a message's tokens the model has already: the rest are new, added to bayes_models.tokens.
    known: db.prepare('SELECT count(*) FROM bayes_tokens WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))').pluck(),
    addCount: db.prepare('UPDATE bayes_models SET tokens = max(tokens + ?, 0) WHERE id = ? RETURNING tokens').pluck(),
    // The rarest tokens of a model (fewest messages, then least recently seen), by bayes_tokens_evict (migration 30):
    // no scan. Frequent tokens carry the model; rare ones, old or new, are what it can best do without.
    forgetRarest: db.prepare(
      `DELETE FROM bayes_tokens WHERE model_id = @id AND token IN
         (SELECT token FROM bayes_tokens WHERE model_id = @id ORDER BY spam + ham, seen_at LIMIT @n)`,
    ),
    modelsAfter: db.prepare('SELECT id FROM bayes_models WHERE id > ? ORDER BY id LIMIT ?').pluck(),
    forgetRare: db.prepare(
      `DELETE FROM bayes_tokens WHERE model_id = @id AND token IN
         (SELECT token FROM bayes_tokens WHERE model_id = @id AND seen_at < @before AND spam + ham <= 1 LIMIT @n)`,
    ),
    pruneLearned: db.prepare(
      `DELETE FROM bayes_learned WHERE (model_id, digest) IN
         (SELECT model_id, digest FROM bayes_learned WHERE learned_at < ? LIMIT ?)`,
    ),
    // Relearning moves one count from the other class; counts never go below zero (a token hash shared by chance).
    moveToSpam: db.prepare(
      `UPDATE bayes_tokens SET ham = max(ham - 1, 0), spam = spam + 1, seen_at = ?
       WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))`,
    ),
    moveToHam: db.prepare(
      `UPDATE bayes_tokens SET spam = max(spam - 1, 0), ham = ham + 1, seen_at = ?
       WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))`,
    ),
    total: db.prepare(
      `UPDATE bayes_models SET spam = spam + @spam, ham = ham + @ham, version = version + 1, updated_at = @now
       WHERE id = @id`,
    ),
    tokens: db.prepare(
      `SELECT t.token, sum(t.spam) AS spam, sum(t.ham) AS ham FROM bayes_tokens t
       WHERE t.model_id IN (SELECT value FROM json_each(@models)) AND t.token IN (SELECT value FROM json_each(@tokens))
       GROUP BY t.token`,
    ),
    tokenCount: db.prepare('SELECT count(*) AS n FROM bayes_tokens WHERE model_id = ?'),
    resetTokens: db.prepare('DELETE FROM bayes_tokens WHERE model_id = ?'),
    resetSeen: db.prepare('DELETE FROM bayes_learned WHERE model_id = ?'),
    resetModel: db.prepare('UPDATE bayes_models SET spam = 0, ham = 0, tokens = 0, tokenizer = NULL, version = version + 1, updated_at = ? WHERE id = ?'),
  };

  /** The model row of `scope`, created on the first learn; undefined when reading a model never learned. */
  function modelId(scope: BayesScope, create: boolean): number | undefined {
    if (scope === null) return (s.globalModel.get() as { id: number }).id;
    const have = s.accountModel.get(scope) as { id: number } | undefined;
    if (have || !create) return have?.id;
    return (s.createModel.get(scope) as { id: number }).id;
  }

  type ModelRow = { spam: number; ham: number; version: number; updated_at: number | null; tokenizer: number };
  /** Forgets everything model `id` learned (its row stays, tokeniser unset). */
  function forget(id: number, now: number): void {
    s.resetTokens.run(id);
    s.resetSeen.run(id);
    s.resetModel.run(now, id);
  }

  /** `tokenizer` undefined: the model's own (a correction, which only moves what the model learned itself). */
  const learnAll = db.transaction((scope: BayesScope, items: readonly LearnItem[], now: number, maxTokens: number, tokenizer: number | undefined): LearnOutcome[] => {
    const id = modelId(scope, true) as number;
    const model = tokenizer === undefined ? undefined : (s.model.get(id) as ModelRow);
    if (model && model.tokenizer !== tokenizer) {
      // Messages cut into other tokens: what they taught says nothing about these (BayesStore.learn).
      if (model.spam + model.ham > 0) forget(id, now);
      s.setTokenizer.run(tokenizer, id);
    }
    const delta: BayesTotals = { spam: 0, ham: 0 };
    let added = 0;
    const out = items.map((item): LearnOutcome => {
      const before = (s.seen.get(id, item.digest) as { class: string } | undefined)?.class;
      if (before === item.cls) return 'already';
      const distinct = [...new Set(item.tokens.map(tokenHash))];
      const hashes = JSON.stringify(distinct);
      if (before === undefined) {
        added += distinct.length - (s.known.get(id, hashes) as number);
        (item.cls === 'spam' ? s.addSpam : s.addHam).run(id, now, hashes);
      } else {
        (item.cls === 'spam' ? s.moveToSpam : s.moveToHam).run(now, id, hashes);
        delta[before as 'spam' | 'ham'] -= 1;
      }
      delta[item.cls] += 1;
      s.markSeen.run(id, item.digest, item.cls, now);
      return before === undefined ? 'learned' : 'relearned';
    });
    if (out.some((o) => o !== 'already')) s.total.run({ id, spam: delta.spam, ham: delta.ham, now });
    // The cap: past it, the rarest tokens (then the least recently seen) go in this same commit. A learn adds at most its messages'
    // tokens (filters/bayes-tokens.ts MAX_TOKENS each), so this deletes at most as many; after the operator lowered
    // the cap, each learn deletes at most EXCESS_PER_LEARN more, so no one commit deletes a model's worth at once.
    const held = s.addCount.get(added, id) as number;
    if (held > maxTokens) {
      const n = Math.min(held - maxTokens, added + EXCESS_PER_LEARN);
      s.addCount.get(-s.forgetRarest.run({ id, n }).changes, id);
    }
    return out;
  });

  // Only what the model learned itself: the others are left out before learnAll (a savepoint inside this one), so
  // what it does is a move or nothing; a move adds no token, so no cap applies.
  const correctAll = db.transaction((scope: BayesScope, items: readonly LearnItem[], now: number): CorrectOutcome[] => {
    const id = modelId(scope, false);
    const known = items.map((i) => id !== undefined && s.seen.get(id, i.digest) !== undefined);
    if (!known.some(Boolean)) return items.map(() => 'unknown');
    const done = learnAll(scope, items.filter((_, k) => known[k]), now, Number.MAX_SAFE_INTEGER, undefined);
    let next = 0;
    return known.map((k) => (k ? (done[next++] as CorrectOutcome) : 'unknown'));
  });

  /** One batch of the rare-token walk: models after `afterId` in id order, `limit` tokens and models at most. */
  const rareBatch = db.transaction((before: number, afterId: number, limit: number) => {
    const models = s.modelsAfter.all(afterId, limit) as number[];
    let deleted = 0;
    for (const id of models) {
      const n = s.forgetRare.run({ id, before, n: limit - deleted }).changes;
      if (n > 0) s.addCount.get(-n, id);
      deleted += n;
      // This model may hold more: the next batch starts with it again.
      if (deleted >= limit) return { deleted, lastId: id - 1, done: false };
    }
    return { deleted, lastId: models.at(-1) ?? afterId, done: models.length < limit };
  });

  return {
    learn(scope, items, now, maxTokens = DEFAULT_MAX_TOKENS, tokenizer = FIRST_TOKENIZER) {
      return learnAll.immediate(scope, items, now, maxTokens, tokenizer);
    },

    correct(scope, items, now) {
      return correctAll.immediate(scope, items, now);
    },

    pruneRareTokens(a) {
      return rareBatch.immediate(a.before, a.afterId, a.limit);
    },

    pruneLearned(before, limit) {
      return s.pruneLearned.run(before, limit).changes;
    },

    counts(scopes, tokens, tokenizer = FIRST_TOKENIZER): BayesCounts {
      const ids: number[] = [];
      let outdated = 0;
      const learned: BayesTotals = { spam: 0, ham: 0 };
      for (const id of scopes.map((sc) => modelId(sc, false))) {
        if (id === undefined) continue;
        const m = s.model.get(id) as ModelRow;
        if (m.tokenizer !== tokenizer) {
          if (m.spam + m.ham > 0) outdated++;
          continue;
        }
        ids.push(id);
        learned.spam += m.spam;
        learned.ham += m.ham;
      }
      const byHash = new Map<number, string>();
      for (const t of tokens) byHash.set(tokenHash(t), t);
      const found = new Map<string, BayesTotals>();
      if (ids.length > 0 && byHash.size > 0) {
        const rows = s.tokens.all({ models: JSON.stringify(ids), tokens: JSON.stringify([...byHash.keys()]) }) as {
          token: number;
          spam: number;
          ham: number;
        }[];
        for (const r of rows) found.set(byHash.get(r.token) as string, { spam: r.spam, ham: r.ham });
      }
      return { learned, tokens: found, outdated };
    },

    stats(scope): BayesModelStats {
      const id = modelId(scope, false);
      if (id === undefined) return { learned: { spam: 0, ham: 0 }, tokens: 0, version: 0, updatedAt: null, tokenizer: FIRST_TOKENIZER };
      const m = s.model.get(id) as ModelRow;
      return {
        learned: { spam: m.spam, ham: m.ham },
        tokens: (s.tokenCount.get(id) as { n: number }).n,
        version: m.version,
        updatedAt: m.updated_at,
        tokenizer: m.tokenizer,
      };
    },

    reset(scope, now) {
      const id = modelId(scope, false);
      if (id === undefined) return;
      db.transaction(() => forget(id, now)).immediate();
    },
  };
}
