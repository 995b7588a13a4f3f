// Owns the PostgreSQL table of reservations against the monthly send limit (storage/ports/send-limits.ts); migration 3.
export const SEND_RESERVATIONS_SCHEMA = `
  CREATE TABLE send_reservations (
    id text PRIMARY KEY,
    account_id bigint NOT NULL,
    period text NOT NULL,
    sends bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX send_reservations_account ON send_reservations(account_id, period);
`;
