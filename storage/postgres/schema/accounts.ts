// Owns the PostgreSQL tables of the accounts area: settings (and, as the port lands, accounts, keys, passwords, usage).
export const ACCOUNTS_SCHEMA = `
  CREATE TABLE settings (
    name text PRIMARY KEY,
    value text NOT NULL
  );
`;
