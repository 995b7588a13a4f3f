// Owns PostgreSQL migration 19 (issue 38 item 3): console sign-in's TOTP secrets, as SQLite's migration 43.
export const TOTP_SCHEMA = `
  CREATE TABLE console_totp (
    subject text PRIMARY KEY,
    account_id bigint REFERENCES accounts(id),
    secret text NOT NULL,
    last_step bigint,
    created_at bigint NOT NULL
  );
`;
