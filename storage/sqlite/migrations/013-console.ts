// Owns migration 13: the web console's operator tokens and sessions (only hashes of the secrets are stored), and the
// deferred-attempts counter of the metric roll-ups its deliverability chart draws (counted from this migration on).
export const CONSOLE = `
  CREATE TABLE console_tokens (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT;
  CREATE TABLE console_sessions (
    id_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('tenant', 'operator')),
    account_id INTEGER REFERENCES accounts(id),
    key_id INTEGER REFERENCES api_keys(id),
    token_id INTEGER REFERENCES console_tokens(id),
    csrf TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX console_sessions_expiry ON console_sessions(expires_at);
  ALTER TABLE metric_rollups ADD COLUMN deferred INTEGER NOT NULL DEFAULT 0;
`;
