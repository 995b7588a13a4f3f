// Owns the SQL of migration 30: the classifier's cap forgets a model's rarest tokens first (fewest messages counted,
// then least recently learned), so its index leads with the count.
// Forgetting by age alone (migration 20) dropped the tokens of whatever mail was learned first, frequent or not: a
// model of 4,836 SpamAssassin corpus messages holds 540,000 distinct tokens (363,000 seen once) against the default
// cap of 150,000, and bench:filter's first fold flagged 14 of 50 hard ham (4 with this order, 3 with no cap). The same
// index serves retention's walk over old tokens seen once (spam + ham <= 1, seen_at < a day), as before.
export const BAYES_EVICT_BY_COUNT = `
  DROP INDEX bayes_tokens_seen;
  CREATE INDEX bayes_tokens_evict ON bayes_tokens(model_id, spam + ham, seen_at);
  `;
