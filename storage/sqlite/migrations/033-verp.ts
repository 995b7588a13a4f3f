// Owns the SQL of migration 33 (issue 35): whether a message's deliveries may leave with a VERP return path.
export const VERP = `
  ALTER TABLE messages ADD COLUMN verp INTEGER NOT NULL DEFAULT 0;
  `;
