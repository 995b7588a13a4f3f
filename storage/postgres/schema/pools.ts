// Owns PostgreSQL migration 11 (issue 35): the sending pool of an account and of each message, as SQLite's migration 35.
export const POOLS_SCHEMA = `
  ALTER TABLE accounts ADD COLUMN pool text;
  ALTER TABLE messages ADD COLUMN pool text;
`;
