// Owns the classifier's models on PostgreSQL (storage/ports/bayes.ts): bayes_models, bayes_tokens, bayes_learned.
// A learn's token counts are written in one statement, whatever the number of messages and tokens.
import { DEFAULT_MAX_TOKENS, FIRST_TOKENIZER, type BayesClass, type BayesScope, type BayesStore, type BayesTotals, type CorrectOutcome, type LearnItem, type LearnOutcome } from '../ports/bayes.js';
import { EXCESS_PER_LEARN, tokenHash } from '../bayes-tokens.js';
import type { Pg, Query } from './database.js';

/**
 * The models of `scope`: `$1` a boolean (the global model asked), `$2` the account ids; `current` when learned with
 * tokeniser `$4` (NULL: FIRST_TOKENIZER).
 */
const MODELS = `SELECT id, spam, ham, coalesce(tokenizer, ${FIRST_TOKENIZER}) = $4 AS current FROM bayes_models WHERE ($1 AND account_id IS NULL) OR account_id = ANY($2::bigint[])`;

/** Forgets everything the locked model `id` learned (its row stays, tokeniser unset), in the caller's unit. */
async function forget(q: Query, id: number, now: number): Promise<void> {
  await q('DELETE FROM bayes_tokens WHERE model_id = $1', [id]);
  await q('DELETE FROM bayes_learned WHERE model_id = $1', [id]);
  await q('UPDATE bayes_models SET spam = 0, ham = 0, tokens = 0, tokenizer = NULL, version = version + 1, updated_at = $2 WHERE id = $1', [id, now]);
}

/** Makes the locked model `id` one of tokeniser `tokenizer`: forgotten first when it holds others' messages. */
async function retokenize(q: Query, id: number, tokenizer: number, now: number): Promise<void> {
  const [m] = await q<{ n: number; tokenizer: number }>(`SELECT spam + ham AS n, coalesce(tokenizer, ${FIRST_TOKENIZER}) AS tokenizer FROM bayes_models WHERE id = $1`, [id]);
  if (!m || m.tokenizer === tokenizer) return;
  if (m.n > 0) await forget(q, id, now);
  await q('UPDATE bayes_models SET tokenizer = $2 WHERE id = $1', [id, tokenizer]);
}

/**
 * The id of the model of `scope`, its row locked until the unit ends: every unit that writes a model's tokens or
 * totals (learn, reset, the prunes) takes it first, so they run one at a time per model on every node, and a learn's
 * read of its tokens stays true until it commits. Created on a learn (`create`); undefined for a model never learned.
 */
async function lockModel(q: Query, scope: BayesScope, create: boolean): Promise<number | undefined> {
  if (scope === null) return (await q<{ id: number }>('SELECT id FROM bayes_models WHERE account_id IS NULL FOR UPDATE'))[0]?.id;
  const find = async () => (await q<{ id: number }>('SELECT id FROM bayes_models WHERE account_id = $1 FOR UPDATE', [scope]))[0]?.id;
  const have = await find();
  if (have !== undefined || !create) return have;
  await q('INSERT INTO bayes_models (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING', [scope]);
  return find();
}

/** What a learn does to the tokens and digests it reads, replayed in item order as the SQLite statements apply it. */
function replay(items: Parameters<BayesStore['learn']>[1], seen: Map<string, BayesClass>, counts: Map<number, BayesTotals>) {
  const initial = new Map([...counts].map(([h, c]) => [h, { ...c }]));
  const touched = new Set<number>();
  const learned = new Map<string, BayesClass>();
  const delta: BayesTotals = { spam: 0, ham: 0 };
  const out = items.map((item): LearnOutcome => {
    const before = seen.get(item.digest);
    if (before === item.cls) return 'already';
    for (const h of new Set(item.tokens.map(tokenHash))) {
      const c = counts.get(h);
      if (before === undefined) {
        // A new message: every token counted (the row made if missing).
        if (c) c[item.cls] += 1;
        else counts.set(h, { spam: item.cls === 'spam' ? 1 : 0, ham: item.cls === 'ham' ? 1 : 0 });
        touched.add(h);
      } else if (c) {
        // Relearned: a count moves over, never below zero; a token forgotten since is not brought back.
        c[before] = Math.max(c[before] - 1, 0);
        c[item.cls] += 1;
        touched.add(h);
      }
    }
    if (before !== undefined) delta[before] -= 1;
    delta[item.cls] += 1;
    seen.set(item.digest, item.cls);
    learned.set(item.digest, item.cls);
    return before === undefined ? 'learned' : 'relearned';
  });
  const tokens = [...touched].map((h) => {
    const c = counts.get(h) as BayesTotals;
    const was = initial.get(h) ?? { spam: 0, ham: 0 };
    return { h, spam: c.spam - was.spam, ham: c.ham - was.ham, added: !initial.has(h) };
  });
  return { out, delta, learned, tokens, added: tokens.filter((t) => t.added).length };
}

/** The digests of `items` the model `id` learned, with their class. */
async function seenOf(q: Query, id: number, items: readonly LearnItem[]): Promise<Map<string, BayesClass>> {
  const seen = new Map<string, BayesClass>();
  const digests = [...new Set(items.map((i) => i.digest))];
  if (digests.length > 0) {
    for (const r of await q<{ digest: string; class: BayesClass }>('SELECT digest, class FROM bayes_learned WHERE model_id = $1 AND digest = ANY($2::text[])', [id, digests])) seen.set(r.digest, r.class);
  }
  return seen;
}

/** A learn into the locked model `id`, in the caller's transaction (`learn`, `correct`). */
async function learnIn(q: Query, id: number, items: readonly LearnItem[], seen: Map<string, BayesClass>, now: number, maxTokens: number): Promise<LearnOutcome[]> {
  const hashes = [...new Set(items.flatMap((i) => i.tokens.map(tokenHash)))];
  const counts = new Map<number, BayesTotals>();
  if (hashes.length > 0) {
    for (const r of await q<{ token: number; spam: number; ham: number }>('SELECT token, spam, ham FROM bayes_tokens WHERE model_id = $1 AND token = ANY($2::bigint[])', [id, hashes])) {
      counts.set(r.token, { spam: r.spam, ham: r.ham });
    }
  }
  const r = replay(items, seen, counts);
  if (r.tokens.length > 0) {
    // Increments, not the values replayed: atomic upserts that would lose no update even without the lock.
    await q(
      `INSERT INTO bayes_tokens (model_id, token, spam, ham, seen_at)
       SELECT $1, u.token, u.spam, u.ham, $5 FROM unnest($2::bigint[], $3::int[], $4::int[]) AS u(token, spam, ham)
       ON CONFLICT (model_id, token) DO UPDATE SET spam = greatest(bayes_tokens.spam + excluded.spam, 0),
         ham = greatest(bayes_tokens.ham + excluded.ham, 0), seen_at = excluded.seen_at`,
      [id, r.tokens.map((t) => t.h), r.tokens.map((t) => t.spam), r.tokens.map((t) => t.ham), now],
    );
  }
  if (r.learned.size > 0) {
    await q(
      `INSERT INTO bayes_learned (model_id, digest, class, learned_at) SELECT $1, u.digest, u.class, $4
       FROM unnest($2::text[], $3::text[]) AS u(digest, class)
       ON CONFLICT (model_id, digest) DO UPDATE SET class = excluded.class, learned_at = excluded.learned_at`,
      [id, [...r.learned.keys()], [...r.learned.values()], now],
    );
  }
  const changed = r.out.some((o) => o !== 'already');
  const held = (await q<{ tokens: number }>(
    `UPDATE bayes_models SET spam = spam + $2, ham = ham + $3, version = version + $4,
       updated_at = CASE WHEN $4 = 1 THEN $5 ELSE updated_at END, tokens = greatest(tokens + $6, 0)
     WHERE id = $1 RETURNING tokens`,
    [id, r.delta.spam, r.delta.ham, changed ? 1 : 0, now, r.added],
  ))[0]?.tokens ?? 0;
  // The cap, as on SQLite: the rarest (then least recently seen) go in this unit, by bayes_tokens_evict, at most
  // what this learn added plus a step.
  if (held > maxTokens) {
    await q(
      `WITH gone AS (DELETE FROM bayes_tokens WHERE model_id = $1 AND token IN
         (SELECT token FROM bayes_tokens WHERE model_id = $1 ORDER BY spam + ham, seen_at, token LIMIT $2) RETURNING 1)
       UPDATE bayes_models SET tokens = greatest(tokens - (SELECT count(*) FROM gone), 0) WHERE id = $1`,
      [id, Math.min(held - maxTokens, r.added + EXCESS_PER_LEARN)],
    );
  }
  return r.out;
}

/** The classifier's models over `pg`. */
export function createPgBayesStore(pg: Pg): BayesStore {
  return {
    learn(scope, items, now, maxTokens = DEFAULT_MAX_TOKENS, tokenizer = FIRST_TOKENIZER) {
      return pg.tx(async (q) => {
        const id = (await lockModel(q, scope, true)) as number;
        await retokenize(q, id, tokenizer, now);
        return learnIn(q, id, items, await seenOf(q, id, items), now, maxTokens);
      });
    },

    correct(scope, items, now) {
      // As on SQLite: only what the model learned itself, moved by the same replay; a move adds no token (no cap).
      return pg.tx(async (q) => {
        const id = await lockModel(q, scope, false);
        if (id === undefined) return items.map((): CorrectOutcome => 'unknown');
        const seen = await seenOf(q, id, items);
        const known = items.filter((i) => seen.has(i.digest));
        if (known.length === 0) return items.map((): CorrectOutcome => 'unknown');
        const done = await learnIn(q, id, known, seen, now, Number.MAX_SAFE_INTEGER);
        let next = 0;
        return items.map((i) => (seen.has(i.digest) ? (done[next++] as CorrectOutcome) : 'unknown'));
      });
    },

    async counts(scopes, tokens, tokenizer = FIRST_TOKENIZER) {
      const byHash = new Map<number, string>();
      for (const t of tokens) byHash.set(tokenHash(t), t);
      // The totals (token NULL, with the outdated models' number) and the tokens' sums in one statement: one
      // snapshot, one round trip per message.
      const rows = await pg.query<{ token: number | null; spam: number; ham: number; outdated: number }>(
        `WITH a AS (${MODELS}), m AS (SELECT id, spam, ham FROM a WHERE current)
         SELECT NULL::bigint AS token, coalesce(sum(spam), 0)::bigint AS spam, coalesce(sum(ham), 0)::bigint AS ham,
           (SELECT count(*) FROM a WHERE NOT current AND spam + ham > 0)::int AS outdated FROM m
         UNION ALL
         SELECT t.token, sum(t.spam)::bigint, sum(t.ham)::bigint, 0 FROM bayes_tokens t
         WHERE t.model_id IN (SELECT id FROM m) AND t.token = ANY($3::bigint[]) GROUP BY t.token`,
        [scopes.includes(null), scopes.filter((s) => s !== null), [...byHash.keys()], tokenizer],
      );
      const learned: BayesTotals = { spam: 0, ham: 0 };
      const found = new Map<string, BayesTotals>();
      let outdated = 0;
      for (const r of rows) {
        if (r.token === null) {
          Object.assign(learned, { spam: r.spam, ham: r.ham });
          outdated = r.outdated;
        } else found.set(byHash.get(r.token) as string, { spam: r.spam, ham: r.ham });
      }
      return { learned, tokens: found, outdated };
    },

    async stats(scope) {
      const m = (await pg.query<{ spam: number; ham: number; version: number; updated_at: number | null; tokens: number; tokenizer: number }>(
        `SELECT spam, ham, version, updated_at, (SELECT count(*) FROM bayes_tokens t WHERE t.model_id = m.id) AS tokens,
           coalesce(tokenizer, ${FIRST_TOKENIZER}) AS tokenizer
         FROM bayes_models m WHERE ($1 AND account_id IS NULL) OR account_id = $2`,
        [scope === null, scope],
      ))[0];
      if (!m) return { learned: { spam: 0, ham: 0 }, tokens: 0, version: 0, updatedAt: null, tokenizer: FIRST_TOKENIZER };
      return { learned: { spam: m.spam, ham: m.ham }, tokens: m.tokens, version: m.version, updatedAt: m.updated_at, tokenizer: m.tokenizer };
    },

    reset(scope, now) {
      return pg.tx(async (q) => {
        const id = await lockModel(q, scope, false);
        if (id === undefined) return;
        await forget(q, id, now);
      });
    },

    // One batch: the models after afterId in id order (a walk, not a feed: a model created meanwhile below the
    // cursor is met by the next run), their rare old tokens, `limit` at most, in one DELETE over them in model order.
    pruneRareTokens(a) {
      return pg.tx(async (q) => {
        const models = (await q<{ id: number }>('SELECT id FROM bayes_models WHERE id > $1 ORDER BY id LIMIT $2 FOR UPDATE', [a.afterId, a.limit])).map((m) => m.id);
        if (models.length === 0) return { deleted: 0, lastId: a.afterId, done: true };
        const gone = await q<{ model_id: number; n: number }>(
          `WITH gone AS (DELETE FROM bayes_tokens WHERE (model_id, token) IN
             (SELECT model_id, token FROM bayes_tokens WHERE model_id = ANY($1::bigint[]) AND seen_at < $2 AND spam + ham <= 1
              ORDER BY model_id LIMIT $3) RETURNING model_id)
           SELECT model_id, count(*)::int AS n FROM gone GROUP BY model_id ORDER BY model_id`,
          [models, a.before, a.limit],
        );
        await q(
          'UPDATE bayes_models m SET tokens = greatest(m.tokens - d.n, 0) FROM unnest($1::bigint[], $2::int[]) AS d(id, n) WHERE m.id = d.id',
          [gone.map((g) => g.model_id), gone.map((g) => g.n)],
        );
        const deleted = gone.reduce((sum, g) => sum + g.n, 0);
        // The last model may hold more: the next batch starts with it again.
        if (deleted >= a.limit) return { deleted, lastId: (gone.at(-1)?.model_id as number) - 1, done: false };
        return { deleted, lastId: models.at(-1) as number, done: models.length < a.limit };
      });
    },

    pruneLearned(before, limit) {
      return pg.exec(
        `DELETE FROM bayes_learned WHERE (model_id, digest) IN
           (SELECT model_id, digest FROM bayes_learned WHERE learned_at < $1 LIMIT $2)`,
        [before, limit],
      );
    },
  };
}

