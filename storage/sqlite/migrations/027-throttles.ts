// Owns the SQL of migration 27: the counters of the Throttles port (storage/ports/throttles.ts).
// Before it, SMTP AUTH failures and console sign-ins were counted per process: each process of a tree (and each
// node) gave a guesser its own allowance.
export const THROTTLES = `
  CREATE TABLE throttle_counters (
    key TEXT PRIMARY KEY,
    hits INTEGER NOT NULL,
    lapses_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX throttle_counters_lapse ON throttle_counters(lapses_at);
  `;
