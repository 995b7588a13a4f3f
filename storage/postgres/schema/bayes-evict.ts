// Owns PostgreSQL migration 5: the classifier's cap forgets a model's rarest tokens first, as SQLite's migration 30
// (storage/sqlite/migrations/030-bayes-evict-by-count.ts says why, with bench:filter's figures).
export const BAYES_EVICT_SCHEMA = `
  DROP INDEX bayes_tokens_seen;
  CREATE INDEX bayes_tokens_evict ON bayes_tokens (model_id, (spam + ham), seen_at);
`;
