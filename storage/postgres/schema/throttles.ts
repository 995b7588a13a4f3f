// Owns the PostgreSQL table of the Throttles port's counters (storage/ports/throttles.ts); migration 2.
export const THROTTLES_SCHEMA = `
  CREATE TABLE throttle_counters (
    key text PRIMARY KEY,
    hits bigint NOT NULL,
    lapses_at bigint NOT NULL
  );
  CREATE INDEX throttle_counters_lapse ON throttle_counters(lapses_at);
`;
