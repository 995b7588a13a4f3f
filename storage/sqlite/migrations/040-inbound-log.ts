// Owns the SQL of migration 40 (issue 37 item 5): the inbound log, one row per inbound message × recipient, and the
// indexes its search needs.
// account_id is NULL for a recipient refused before a served domain was found (relay denied): only the operator
// sees those. delivery_id / quarantine_id name what the message became (no foreign key: deliveries and quarantine
// entries have retentions of their own, and a row outlives neither by design, see mta/jobs/retention.ts).
// Every equality filter gets (account_id, column, created_at) with the rowid id as the implicit last key: one
// account's matches come out in the search's order (created_at DESC, id DESC) and a page stops after start_at +
// count rows, without a sort. The time index and the domain index (a domain admin's searches) carry the subject, so
// a subject substring is tested on index pages alone (as migration 29 does for the outbound log): a substring found
// nowhere in 30 days of a 300,000-row account costs ~17 ms instead of a table lookup per row. Addresses compare ASCII
// case-insensitively (NOCASE).
export const INBOUND_LOG = `
  CREATE TABLE inbound_log (
    id INTEGER PRIMARY KEY,
    account_id INTEGER REFERENCES accounts(id),
    domain TEXT NOT NULL,
    queue_id TEXT,
    stage TEXT NOT NULL CHECK (stage IN ('rcpt', 'data')),
    client_ip TEXT NOT NULL,
    helo TEXT NOT NULL,
    sender TEXT NOT NULL,
    rcpt TEXT NOT NULL,
    subject TEXT,
    message_id TEXT,
    size INTEGER,
    verdict TEXT NOT NULL CHECK (verdict IN ('relayed', 'flagged', 'quarantined', 'refused', 'deferred')),
    reason TEXT NOT NULL,
    score REAL,
    reply TEXT NOT NULL,
    steps TEXT NOT NULL,                 -- JSON array of the verdict records of this recipient's steps
    delivery_id INTEGER,                 -- the relay's delivery (relayed, flagged)
    quarantine_id INTEGER,               -- the quarantine entry (quarantined)
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_log_account_time ON inbound_log(account_id, created_at, id, subject);
  CREATE INDEX inbound_log_domain ON inbound_log(account_id, domain, created_at, id, subject);
  CREATE INDEX inbound_log_domain_verdict ON inbound_log(account_id, domain, verdict, created_at);
  CREATE INDEX inbound_log_verdict ON inbound_log(account_id, verdict, created_at);
  CREATE INDEX inbound_log_sender ON inbound_log(account_id, sender COLLATE NOCASE, created_at);
  CREATE INDEX inbound_log_rcpt ON inbound_log(account_id, rcpt COLLATE NOCASE, created_at);
  CREATE INDEX inbound_log_client ON inbound_log(account_id, client_ip, created_at);
  CREATE INDEX inbound_log_message ON inbound_log(account_id, message_id, created_at);
  CREATE INDEX inbound_log_queue ON inbound_log(account_id, queue_id, created_at);
  -- Retention: old rows across every account (and none) in created_at order.
  CREATE INDEX inbound_log_created ON inbound_log(created_at);
  `;
