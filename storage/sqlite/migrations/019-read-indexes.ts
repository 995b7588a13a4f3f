// Owns the SQL of migration 19 (user_version 19): indexes that let two operator listings read rows in the order
// their ports promise without sorting, and the greylist's bounded prune find old networks without a scan.
// 19: listEntries reads one list of one scope oldest first (by created_at); listReports of one account reads newest
// first (the all-accounts view already has inbound_reports_created). Each index ends, implicitly, with the rowid,
// which is the tie-break. greylist_clients_last_pass: the prune deletes a batch of networks whose last pass is old.
// Indexes only: independent of migration 18 (the spool).
export const READ_INDEXES = `
  CREATE INDEX inbound_list_entries_listed ON inbound_list_entries(account_id, level, scope, action, created_at);
  CREATE INDEX inbound_reports_account ON inbound_reports(account_id, created_at);
  CREATE INDEX greylist_clients_last_pass ON greylist_clients(last_pass_at);
  `;
