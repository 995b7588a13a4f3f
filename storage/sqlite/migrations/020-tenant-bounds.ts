// Owns the SQL of migration 20 (user_version 20): what bounding a tenant's storage needs (issue 31): the size of
// each report, when each classifier token was last learned and how many tokens each model holds.
// inbound_reports.size: the bytes the customer reported (the row keeps at most the first 320 KiB). bayes_tokens.seen_at:
// the last learn that counted the token (SpamAssassin's bayes atime), existing tokens taking their model's last
// update; with the index, the cap forgets a model's least recently seen tokens and retention its old rare ones
// without a scan. bayes_models.tokens: the count the cap checks at every learn, kept in step by the learns.
// bayes_learned_at: retention deletes learned-message records by age.
export const TENANT_BOUNDS = `
  ALTER TABLE inbound_reports ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
  UPDATE inbound_reports SET size = length(CAST(message_content AS BLOB));
  ALTER TABLE bayes_tokens ADD COLUMN seen_at INTEGER NOT NULL DEFAULT 0;
  UPDATE bayes_tokens SET seen_at = coalesce((SELECT m.updated_at FROM bayes_models m WHERE m.id = bayes_tokens.model_id), 0);
  CREATE INDEX bayes_tokens_seen ON bayes_tokens(model_id, seen_at);
  ALTER TABLE bayes_models ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;
  UPDATE bayes_models SET tokens = (SELECT count(*) FROM bayes_tokens t WHERE t.model_id = bayes_models.id);
  CREATE INDEX bayes_learned_at ON bayes_learned(learned_at);
`;
