// Owns PostgreSQL migration 9 (issue 35): whether a message's deliveries may leave with a VERP return path, as SQLite's migration 33.
export const VERP_SCHEMA = `
  ALTER TABLE messages ADD COLUMN verp boolean NOT NULL DEFAULT false;
`;
