// Owns the SQL of migration 29: the log's per-account time index also carries the subject, so a subject search scans it alone.
// A subject substring too common for the trigram index is found by scanning one account's rows newest first and
// testing LIKE on each; with the subject in the index that scan reads index pages only, where before it looked up
// every visited row in the table (at 10 M rows, a 3-day window: 87-357 ms of CPU per search before, 15-19 ms after).
// delivery_id is named so the index's order is exactly the search's (created_at DESC, delivery_id DESC) and the
// subject only rides along. It replaces the old (account_id, created_at) index under the same name: every query
// that named it (retention, the searches without a better index) keeps its plan, and the table keeps one index of
// this shape to maintain per row, not two.
export const LOG_SUBJECT_COVERING = `
  DROP INDEX smtp_log_account_time;
  CREATE INDEX smtp_log_account_time ON smtp_log(account_id, created_at, delivery_id, subject);
  `;
