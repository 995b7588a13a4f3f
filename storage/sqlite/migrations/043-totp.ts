// Owns the SQL of migration 43 (issue 38 item 3): console sign-in's second factor, one TOTP secret (RFC 6238) per
// account or for the operator, and the last time step a code was accepted for (a code is good once).
// subject is 'operator' or 'account:<id>'; account_id (NULL for the operator) lets a purged sub-account's go with it.
export const TOTP = `
  CREATE TABLE console_totp (
    subject TEXT PRIMARY KEY,
    account_id INTEGER REFERENCES accounts(id),
    secret TEXT NOT NULL,
    last_step INTEGER,
    created_at INTEGER NOT NULL
  ) STRICT;
  `;
