// Owns the SQL of migration 35 (issue 35): the sending pool of an account, and of each message (outbound.pools).
export const POOLS = `
  ALTER TABLE accounts ADD COLUMN pool TEXT;
  ALTER TABLE messages ADD COLUMN pool TEXT;
  `;
