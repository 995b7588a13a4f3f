// Owns which tables keep a deleted sub-account and which go with it when retention purges it: one list for every
// backend, so SQLite and PostgreSQL purge the same rows.

/**
 * Tables whose rows are records with their own retention (the SMTP log, events, messages, metrics, reports, …) or
 * that still route mail (inbound domains): while any names a deleted sub-account, the account row stays, so what
 * events, logs and metrics name still resolves and the handle is not handed out again. `column` is the account
 * column each is probed on (an index leads with it: SQLite migration 24 added the missing ones).
 */
export const KEEPING_TABLES: readonly { table: string; column: string }[] = [
  { table: 'messages', column: 'account_id' },
  { table: 'events', column: 'account_id' },
  { table: 'smtp_log', column: 'account_id' },
  { table: 'webhook_batches', column: 'account_id' },
  { table: 'tracked_messages', column: 'account_id' },
  { table: 'metric_rollups', column: 'account_id' },
  { table: 'metric_seconds', column: 'account_id' },
  { table: 'inbound_reports', column: 'account_id' },
  { table: 'inbound_quarantine', column: 'account_id' },
  { table: 'inbound_log', column: 'account_id' },
  { table: 'audit_log', column: 'account_id' },
  { table: 'inbound_domains', column: 'account_id' },
  { table: 'sender_strikes', column: 'account_id' },
  { table: 'sender_delistings', column: 'account_id' },
  { table: 'alerts', column: 'account_id' },
  { table: 'alerts', column: 'sender_account_id' },
];

/**
 * Tables whose rows a deleted sub-account owns and nothing else reads once it is deleted (its revoked keys and
 * deleted passwords, settings, lists, recipients, monitors, model, send reservations): deleted with it, children first for the foreign keys.
 * console_sessions goes by account and by key (a session names the key it signed in with).
 */
export const OWNED_TABLES: readonly string[] = [
  'console_sessions',
  'inbound_list_entries',
  'inbound_recipients',
  'api_keys',
  'smtp_passwords',
  'usage_counters',
  'dkim_keys',
  'suppressions',
  'lockdown_allow',
  'inbound_subscriptions',
  'webhooks',
  'custom_tracking_domains',
  'account_scan_policies',
  'sender_blocks',
  'alert_monitors',
  'idempotency_keys',
  'bayes_models',
  // A reservation against the monthly limit of a send still in flight: it only ever holds budget back.
  'send_reservations',
  // Its console sign-in's second factor (issue 38).
  'console_totp',
];

/**
 * The SQL condition (over `accounts a`) that is true while some record keeps account `a`: a row of a KEEPING_TABLES
 * table names it, or another account's inbound domain is bound to one of its keys or subscriptions. Plain SQL that
 * both backends run.
 */
export function keptCondition(): string {
  const keptBy = KEEPING_TABLES.map(({ table, column }) => `EXISTS (SELECT 1 FROM ${table} WHERE ${column} = a.id)`);
  return `(${keptBy.join(' OR ')}
         -- Another account's inbound domain bound (associate-key) to one of its keys keeps it too.
         OR EXISTS (SELECT 1 FROM api_keys k JOIN inbound_domains d ON d.api_key_id = k.id WHERE k.account_id = a.id)
         OR EXISTS (SELECT 1 FROM inbound_subscriptions sub JOIN inbound_domains d ON d.subscription_id = sub.id
                    WHERE sub.account_id = a.id))`;
}
