// Owns the SQL of migration 12 (user_version 12): alert monitors and the alerts they fired (outbound abuse control).
// 12: a monitor watches one condition for an account's sender identities and delivers its alerts by webhook or
// email; every alert fired is one row (alertcount reads them), which also carries the delivery's retry state; an
// index lets the hard-bounce rate of one sender identity be read from the queue without a scan.
export const ALERTS = `
  CREATE TABLE alert_monitors (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    condition TEXT NOT NULL,
    interval_hours INTEGER NOT NULL CHECK (interval_hours BETWEEN 1 AND 24),
    delivery TEXT NOT NULL CHECK (delivery IN ('webhook', 'email')),
    target TEXT NOT NULL,                -- webhook URL or email address
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX alert_monitors_account ON alert_monitors(account_id, condition);

  CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    monitor_id INTEGER NOT NULL,         -- no foreign key: alerts outlive a deleted monitor
    account_id INTEGER NOT NULL REFERENCES accounts(id),        -- the monitor's account
    sender_account_id INTEGER NOT NULL REFERENCES accounts(id), -- the (sub-)account whose identity it is
    condition TEXT NOT NULL,
    sender_id TEXT NOT NULL,
    payload TEXT NOT NULL,               -- the alert notification (api.md §4.5) as JSON
    fired_at INTEGER NOT NULL,
    delivery TEXT NOT NULL CHECK (delivery IN ('webhook', 'email')),
    target TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_until INTEGER,
    last_status_code INTEGER,
    last_error TEXT,
    delivered_at INTEGER
  ) STRICT;
  CREATE INDEX alerts_monitor_sender ON alerts(monitor_id, sender_id, fired_at);
  CREATE INDEX alerts_due ON alerts(next_attempt_at) WHERE state IN ('pending', 'sending');
  CREATE INDEX alerts_sender_account ON alerts(sender_account_id, fired_at);

  CREATE INDEX messages_sender_id ON messages(account_id, sender_id, created_at) WHERE sender_id IS NOT NULL;
  `;
