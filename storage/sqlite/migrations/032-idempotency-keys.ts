// Owns the SQL of migration 32 (issue 36): the answers kept under API requests' Idempotency-Key, per account.
export const IDEMPOTENCY_KEYS = `
  CREATE TABLE idempotency_keys (
    account_id INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
  );
  CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
  `;
