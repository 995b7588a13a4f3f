// Owns the SQLite implementation of the classifier's models (storage/ports/bayes.ts): bayes_models, bayes_tokens,
// bayes_learned (migration 16).
import crypto from 'node:crypto';
import type { Db } from './database.js';
import type { BayesCounts, BayesModelStats, BayesScope, BayesStore, BayesTotals, LearnItem, LearnOutcome } from '../ports/bayes.js';

/**
 * A token as stored: the first 48 bits of its MD5, a safe JavaScript integer. Message words are not kept as text
 * (privacy); a collision among 2^48 values costs one token's counts being shared, as rspamd's 64-bit hashes accept.
 */
export function tokenHash(token: string): number {
  return crypto.hash('md5', token, 'buffer').readUIntBE(0, 6);
}

/** The classifier's models in the SQLite database `db`. */
export function createSqliteBayesStore(db: Db): BayesStore {
  const s = {
    globalModel: db.prepare('SELECT id FROM bayes_models WHERE account_id IS NULL'),
    accountModel: db.prepare('SELECT id FROM bayes_models WHERE account_id = ?'),
    createModel: db.prepare('INSERT INTO bayes_models (account_id) VALUES (?) ON CONFLICT (account_id) DO NOTHING RETURNING id'),
    model: db.prepare('SELECT spam, ham, version, updated_at FROM bayes_models WHERE id = ?'),
    seen: db.prepare('SELECT class FROM bayes_learned WHERE model_id = ? AND digest = ?'),
    markSeen: db.prepare(
      `INSERT INTO bayes_learned (model_id, digest, class, learned_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (model_id, digest) DO UPDATE SET class = excluded.class, learned_at = excluded.learned_at`,
    ),
    // One statement per message (the tokens as a JSON array): SQLite loops in C, several times faster than a row each.
    // `WHERE true` lets the upsert follow a SELECT (sqlite.org/lang_upsert.html, parsing ambiguity).
    addSpam: db.prepare(
      `INSERT INTO bayes_tokens (model_id, token, spam) SELECT ?, value, 1 FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET spam = spam + 1`,
    ),
    addHam: db.prepare(
      `INSERT INTO bayes_tokens (model_id, token, ham) SELECT ?, value, 1 FROM json_each(?) WHERE true
       ON CONFLICT (model_id, token) DO UPDATE SET ham = ham + 1`,
    ),
    // Relearning moves one count from the other class; counts never go below zero (a token hash shared by chance).
    moveToSpam: db.prepare(
      `UPDATE bayes_tokens SET ham = max(ham - 1, 0), spam = spam + 1
       WHERE model_id = ? AND token IN (SELECT value FROM json_each(?))`,
    ),
    moveToHam: db.prepare(
      `UPDATE bayes_tokens SET spam = max(spam - 1, 0), ham = ham + 1
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
    resetModel: db.prepare('UPDATE bayes_models SET spam = 0, ham = 0, version = version + 1, updated_at = ? WHERE id = ?'),
  };

  /** The model row of `scope`, created on the first learn; undefined when reading a model never learned. */
  function modelId(scope: BayesScope, create: boolean): number | undefined {
    if (scope === null) return (s.globalModel.get() as { id: number }).id;
    const have = s.accountModel.get(scope) as { id: number } | undefined;
    if (have || !create) return have?.id;
    return (s.createModel.get(scope) as { id: number }).id;
  }

  const learnAll = db.transaction((scope: BayesScope, items: readonly LearnItem[], now: number): LearnOutcome[] => {
    const id = modelId(scope, true) as number;
    const delta: BayesTotals = { spam: 0, ham: 0 };
    const out = items.map((item): LearnOutcome => {
      const before = (s.seen.get(id, item.digest) as { class: string } | undefined)?.class;
      if (before === item.cls) return 'already';
      const hashes = JSON.stringify([...new Set(item.tokens.map(tokenHash))]);
      if (before === undefined) {
        (item.cls === 'spam' ? s.addSpam : s.addHam).run(id, hashes);
      } else {
        (item.cls === 'spam' ? s.moveToSpam : s.moveToHam).run(id, hashes);
        delta[before as 'spam' | 'ham'] -= 1;
      }
      delta[item.cls] += 1;
      s.markSeen.run(id, item.digest, item.cls, now);
      return before === undefined ? 'learned' : 'relearned';
    });
    if (out.some((o) => o !== 'already')) s.total.run({ id, spam: delta.spam, ham: delta.ham, now });
    return out;
  });

  return {
    async learn(scope, items, now) {
      return learnAll.immediate(scope, items, now);
    },

    async counts(scopes, tokens): Promise<BayesCounts> {
      const ids = scopes.map((sc) => modelId(sc, false)).filter((id): id is number => id !== undefined);
      const learned: BayesTotals = { spam: 0, ham: 0 };
      for (const id of ids) {
        const m = s.model.get(id) as { spam: number; ham: number };
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
      return { learned, tokens: found };
    },

    async stats(scope): Promise<BayesModelStats> {
      const id = modelId(scope, false);
      if (id === undefined) return { learned: { spam: 0, ham: 0 }, tokens: 0, version: 0, updatedAt: null };
      const m = s.model.get(id) as { spam: number; ham: number; version: number; updated_at: number | null };
      return {
        learned: { spam: m.spam, ham: m.ham },
        tokens: (s.tokenCount.get(id) as { n: number }).n,
        version: m.version,
        updatedAt: m.updated_at,
      };
    },

    async reset(scope, now) {
      const id = modelId(scope, false);
      if (id === undefined) return;
      db.transaction(() => {
        s.resetTokens.run(id);
        s.resetSeen.run(id);
        s.resetModel.run(now, id);
      }).immediate();
    },
  };
}
