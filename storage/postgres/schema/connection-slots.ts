// Owns PostgreSQL migration 20 (issue 35): destination limits' connection slots, as SQLite's migration 44.
export const CONNECTION_SLOTS_SCHEMA = `
  CREATE TABLE connection_slots (
    pattern text NOT NULL,
    slot integer NOT NULL,
    owner text NOT NULL,
    until bigint NOT NULL,
    PRIMARY KEY (pattern, slot)
  );
  CREATE INDEX connection_slots_owner ON connection_slots (owner);
  CREATE INDEX connection_slots_until ON connection_slots (until);
`;
