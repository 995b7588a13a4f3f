// Owns the SQL of migration 28: reservations against the monthly send limit (storage/ports/send-limits.ts).
// Before it, a send read the usage, then accepted: two requests at once could both pass a limit only one fitted.
export const SEND_RESERVATIONS = `
  CREATE TABLE send_reservations (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL,
    period TEXT NOT NULL,
    sends INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX send_reservations_account ON send_reservations(account_id, period);
  `;
