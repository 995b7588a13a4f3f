// Owns the SQL of migration 41 (issue 37 item 4): the one recipient address a console session is limited to (a
// quarantine digest's view link's session, which has no API key; NULL for every other session).
export const CONSOLE_RECIPIENT = `
  ALTER TABLE console_sessions ADD COLUMN recipient TEXT;
`;
