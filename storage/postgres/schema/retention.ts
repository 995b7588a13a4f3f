// Owns the PostgreSQL indexes retention walks by: messages in (created_at, id) order (SQLite walks its rowid instead).

/**
 * Retention's walks over messages (storage/postgres/retention.ts): all of them, and those still keeping a body, in
 * the (created_at, id) order of the walk's cursor, so a batch reads its window from an index range and a run never
 * scans the table. After the queue's part, whose table they index.
 */
export const RETENTION_SCHEMA = `
  CREATE INDEX messages_created ON messages(created_at, id);
  CREATE INDEX messages_with_body_created ON messages(created_at, id) WHERE body_ref IS NOT NULL;
`;
