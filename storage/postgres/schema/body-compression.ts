// Owns PostgreSQL migration 6: message bodies are compressed with lz4 rather than PostgreSQL's default pglz.
//
// A body above TOAST's threshold (~2 KB) is compressed in the writer's backend, on the same cores as Sluice on a
// small install: pglz cost PostgreSQL 3.1 ms of CPU per relayed 100 KB message (bench:relay, 10 sessions), most of
// the gap to SQLite there. lz4 compresses several times faster at a similar ratio on text. Only values written from
// now on are compressed with it (both methods read back alike); a server built without lz4 keeps pglz
// (feature_not_supported), as the migration must not fail on it.
export const BODY_COMPRESSION_SCHEMA = `
  DO $$
  BEGIN
    ALTER TABLE message_bodies ALTER COLUMN body SET COMPRESSION lz4;
    ALTER TABLE body_chunks ALTER COLUMN data SET COMPRESSION lz4;
    ALTER TABLE inbound_quarantine_bodies ALTER COLUMN body SET COMPRESSION lz4;
  EXCEPTION WHEN feature_not_supported THEN
    NULL;
  END
  $$;
`;
