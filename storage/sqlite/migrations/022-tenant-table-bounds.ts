// Owns the SQL of migration 22: the index the hourly metric counters' retention reads (issue 31, bounded storage).
// metric_rollups_hour: the prune deletes a batch of hourly rows older than retention.metric_days, oldest first,
// without a scan of every account's campaigns (the primary key leads with account_id, campaign). Written only when
// a row is inserted (an hour's first event of an account and campaign), never by the counters' updates.
export const TENANT_TABLE_BOUNDS = `
  CREATE INDEX metric_rollups_hour ON metric_rollups(hour);
  `;
