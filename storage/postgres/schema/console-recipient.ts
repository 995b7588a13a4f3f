// Owns PostgreSQL migration 17 (issue 37 item 4): the one recipient a console session is limited to, as SQLite's
// migration 41.
export const CONSOLE_RECIPIENT_SCHEMA = `
  ALTER TABLE console_sessions ADD COLUMN recipient text;
`;
