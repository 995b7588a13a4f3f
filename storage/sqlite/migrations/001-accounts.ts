// Owns the SQL of migration 1 (user_version 1): accounts, API keys, SMTP passwords, usage counters, settings.
// 1: accounts, API keys, SMTP passwords, usage counters, settings.
export const ACCOUNTS = `
  CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;

  -- A parent account has parent_id NULL. Handles are never reused, so deleted rows stay (deleted_at set).
  CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    handle TEXT NOT NULL UNIQUE,
    company_name TEXT,
    parent_id INTEGER REFERENCES accounts(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    -- monthly send limit: NULL = unlimited; -1 = inherit the parent's (sub-accounts only)
    send_limit INTEGER,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
  ) STRICT;
  CREATE INDEX accounts_parent ON accounts(parent_id);

  CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    scope TEXT NOT NULL CHECK (scope IN ('api', 'inbound')),
    key_hash TEXT NOT NULL UNIQUE,
    redacted TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT;
  CREATE INDEX api_keys_account ON api_keys(account_id, revoked_at);

  CREATE TABLE smtp_passwords (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    password_hash TEXT NOT NULL UNIQUE,
    redacted TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
  ) STRICT;
  CREATE INDEX smtp_passwords_account ON smtp_passwords(account_id, deleted_at);

  -- messages accepted for sending per account per calendar month (UTC), for limits and /usage
  CREATE TABLE usage_counters (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    period TEXT NOT NULL,
    sends INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, period)
  ) STRICT;
  `;
