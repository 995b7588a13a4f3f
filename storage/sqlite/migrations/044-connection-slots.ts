// Owns the SQL of migration 44 (issue 35): destination limits' connection slots, leased so a cap holds across processes.
export const CONNECTION_SLOTS = `
  CREATE TABLE connection_slots (
    pattern TEXT NOT NULL,
    slot INTEGER NOT NULL,
    owner TEXT NOT NULL,
    until INTEGER NOT NULL,
    PRIMARY KEY (pattern, slot)
  );
  CREATE INDEX connection_slots_owner ON connection_slots (owner);
  CREATE INDEX connection_slots_until ON connection_slots (until);
  `;
