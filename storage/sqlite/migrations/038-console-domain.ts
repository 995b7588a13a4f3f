// Owns the SQL of migration 38 (issue 37): the inbound domain a console session is limited to (a domain-admin login
// link's session; NULL for a session of the whole account or the operator's).
export const CONSOLE_DOMAIN = `
  ALTER TABLE console_sessions ADD COLUMN domain TEXT;
`;
