// Owns the SQL of migration 6 (user_version 6): the inbound quarantine.
// 6: inbound quarantine (issue 5) — messages held by a domain's abuse policy, with their envelope, the verdict of
// every filtering step and a release lease (relayed once), kept until expires_at (inbound.quarantine_days).
// (Planned as 7 after the webhooks migration; that one had not landed yet, so this one took the next number.)
export const QUARANTINE = `
  CREATE TABLE inbound_quarantine (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain_id INTEGER REFERENCES inbound_domains(id) ON DELETE SET NULL,  -- NULL once the domain is deleted
    domain TEXT NOT NULL,                -- the provisioned domain the recipients are on
    queue_id TEXT NOT NULL,              -- the id of the MX's 250 reply and logs
    mail_from TEXT NOT NULL,             -- envelope sender; '' is the null sender <>
    rcpt_to TEXT NOT NULL,               -- JSON array of this domain's recipients
    client_ip TEXT NOT NULL,
    helo TEXT NOT NULL,
    from_header TEXT,
    subject TEXT,
    message_id TEXT,
    size INTEGER NOT NULL,
    score REAL NOT NULL,
    reason TEXT NOT NULL,                -- reason code of the quarantine decision
    verdicts TEXT NOT NULL,              -- JSON array of every step's verdict record
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,         -- retention end; never pruned before it while unreleased
    release_started_at INTEGER,          -- lease of a release in progress (crash: expires, release again)
    released_at INTEGER                  -- relayed once; later releases answer 409
  ) STRICT;
  CREATE INDEX inbound_quarantine_account ON inbound_quarantine(account_id, created_at);
  CREATE INDEX inbound_quarantine_expiry ON inbound_quarantine(expires_at);

  -- Kept apart so that listing never pages through bodies.
  CREATE TABLE inbound_quarantine_bodies (
    quarantine_id INTEGER PRIMARY KEY REFERENCES inbound_quarantine(id) ON DELETE CASCADE,
    body BLOB NOT NULL
  ) STRICT;
  `;
