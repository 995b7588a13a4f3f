// Owns the SQL of migration 24: the indexes the purge of deleted sub-accounts reads (issue 31, bounded storage).
// The purge asks, per deleted sub-account, whether any record still names it (storage/sqlite/account-purge.ts), and
// deletes the rows it owns; these columns had no index leading with them, so each question or delete would scan the
// table. SQLite also wants an index on a child key for the foreign-key check of a parent's DELETE
// (https://sqlite.org/foreignkeys.html §3): inbound_domains and console_sessions name keys and subscriptions.
export const SUB_ACCOUNT_PURGE = `
  CREATE INDEX messages_account ON messages(account_id);
  CREATE INDEX tracked_messages_account ON tracked_messages(account_id);
  CREATE INDEX alerts_account ON alerts(account_id);
  CREATE INDEX inbound_domains_api_key ON inbound_domains(api_key_id);
  CREATE INDEX inbound_domains_subscription ON inbound_domains(subscription_id);
  CREATE INDEX inbound_subscriptions_account ON inbound_subscriptions(account_id);
  CREATE INDEX console_sessions_account ON console_sessions(account_id);
  CREATE INDEX console_sessions_key ON console_sessions(key_id);
  `;
