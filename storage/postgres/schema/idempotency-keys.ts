// Owns PostgreSQL migration 8 (issue 36): the answers kept under API requests' Idempotency-Key, as SQLite's migration 32.
export const IDEMPOTENCY_KEYS_SCHEMA = `
  CREATE TABLE idempotency_keys (
    account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    key text NOT NULL,
    digest text NOT NULL,
    status integer NOT NULL,
    body text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (account_id, key)
  );
  CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
`;
