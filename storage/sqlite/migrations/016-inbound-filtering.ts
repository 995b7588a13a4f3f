// Owns migration 16: the statistical classifier's models (global and per account: learned-message totals, token
// counts keyed by a 48-bit hash, never the token's text, and the digests of learned messages) and greylisting's
// memory (triplets of client network, sender and recipient; client networks that retried enough to be let through).
export const INBOUND_FILTERING = `
  CREATE TABLE bayes_models (
    id INTEGER PRIMARY KEY,
    account_id INTEGER UNIQUE REFERENCES accounts(id) ON DELETE CASCADE,
    spam INTEGER NOT NULL DEFAULT 0,
    ham INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER
  ) STRICT;
  INSERT INTO bayes_models (id, account_id) VALUES (1, NULL);
  CREATE TABLE bayes_tokens (
    model_id INTEGER NOT NULL REFERENCES bayes_models(id) ON DELETE CASCADE,
    token INTEGER NOT NULL,
    spam INTEGER NOT NULL DEFAULT 0,
    ham INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (model_id, token)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE bayes_learned (
    model_id INTEGER NOT NULL REFERENCES bayes_models(id) ON DELETE CASCADE,
    digest TEXT NOT NULL,
    class TEXT NOT NULL CHECK (class IN ('spam', 'ham')),
    learned_at INTEGER NOT NULL,
    PRIMARY KEY (model_id, digest)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE greylist_triplets (
    network TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    passed_at INTEGER,
    PRIMARY KEY (network, sender, recipient)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX greylist_triplets_seen ON greylist_triplets(last_seen);
  CREATE TABLE greylist_clients (
    network TEXT PRIMARY KEY,
    passes INTEGER NOT NULL,
    last_pass_at INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
`;
