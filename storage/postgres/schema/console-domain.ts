// Owns PostgreSQL migration 14 (issue 37): the inbound domain a console session is limited to, as SQLite's migration 38.
export const CONSOLE_DOMAIN_SCHEMA = `
  ALTER TABLE console_sessions ADD COLUMN domain text;
`;
