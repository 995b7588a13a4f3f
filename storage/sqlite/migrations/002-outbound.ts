// Owns the SQL of migration 2 (user_version 2): the outbound engine, from DKIM keys to the SMTP log.
// 2: outbound engine — DKIM keys, suppressions, messages and their bodies, per-recipient deliveries and attempts,
// the events outbox and the SMTP log.
export const OUTBOUND = `
  CREATE TABLE dkim_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain TEXT NOT NULL,                -- lower-case A-label
    selector TEXT NOT NULL,
    algorithm TEXT NOT NULL DEFAULT 'rsa',
    key_length INTEGER NOT NULL,
    private_key TEXT NOT NULL,           -- PKCS#8 PEM; never leaves the server
    public_key TEXT NOT NULL,            -- base64 SPKI DER, the p= value of the DNS record
    status TEXT NOT NULL CHECK (status IN ('active', 'rotated', 'retired', 'revoked')),
    created_at INTEGER NOT NULL,
    status_modified_at INTEGER NOT NULL,
    grace_period_expires_at INTEGER,
    retires_at INTEGER,
    UNIQUE (account_id, domain, selector)
  ) STRICT;
  CREATE INDEX dkim_keys_due ON dkim_keys(status, retires_at);

  CREATE TABLE suppressions (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    recipient TEXT NOT NULL,             -- lower-cased address
    source TEXT NOT NULL CHECK (source IN ('api', 'unsubscribe_link', 'list_unsubscribe', 'hard_bounce', 'spam_complaint')),
    transactional INTEGER NOT NULL,      -- 1 when the entry suppresses transactional mail
    non_transactional INTEGER NOT NULL,  -- 1 when it suppresses non-transactional mail
    notes TEXT,
    sender TEXT,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, recipient, source)
  ) STRICT;
  CREATE INDEX suppressions_created ON suppressions(account_id, created_at);

  -- One composed message (one per personalization), outbound or inbound relay.
  CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    account_id INTEGER REFERENCES accounts(id),   -- NULL only for system mail (DSNs)
    kind TEXT NOT NULL CHECK (kind IN ('outbound', 'relay', 'dsn')),
    request_id TEXT NOT NULL,
    message_id TEXT NOT NULL,            -- Message-ID header value without <>
    mail_from TEXT NOT NULL,             -- envelope sender; '' is the null sender <>
    from_email TEXT,                     -- From header address
    subject TEXT,
    campaign_id TEXT,
    transactional INTEGER NOT NULL DEFAULT 1,
    size INTEGER NOT NULL,
    auth TEXT,                           -- SMTP AUTH user or API key id that submitted it
    upstream TEXT,                       -- client IP (SMTP) or API caller IP
    upstream_hostname TEXT,
    sender_id TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL          -- queue lifetime end: undelivered recipients hard-bounce after it
  ) STRICT;
  CREATE INDEX messages_request ON messages(request_id);

  -- Kept apart from messages so scans of metadata never page through bodies.
  CREATE TABLE message_bodies (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    body BLOB NOT NULL
  ) STRICT;

  -- One per recipient. state: queued (waiting for next_attempt_at), sending (claimed; lease until next_attempt_at),
  -- delivered, bounced, dropped (suppressed before sending), held (quarantine; issue 5).
  CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    rcpt TEXT NOT NULL,
    domain TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'delivered', 'bounced', 'dropped', 'held')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    locked_by TEXT,
    last_code INTEGER,
    last_status TEXT,                    -- enhanced status code (RFC 3463), e.g. 5.1.1
    last_response TEXT,
    last_command TEXT,
    last_host TEXT,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX deliveries_due ON deliveries(state, next_attempt_at);
  CREATE INDEX deliveries_message ON deliveries(message_id);

  CREATE TABLE delivery_attempts (
    id INTEGER PRIMARY KEY,
    delivery_id INTEGER NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    at INTEGER NOT NULL,
    outcome TEXT NOT NULL,               -- delivered | deferred | bounced
    code INTEGER,
    status TEXT,
    response TEXT,
    command TEXT,
    host TEXT
  ) STRICT;
  CREATE INDEX delivery_attempts_delivery ON delivery_attempts(delivery_id);

  -- Outbox of webhook events, written in the same transaction as the state change (api.md §4.2 fields in payload).
  CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    event TEXT NOT NULL,
    payload TEXT NOT NULL,               -- JSON object as posted to the webhook
    created_at INTEGER NOT NULL,
    batch_id INTEGER                     -- set once delivered in a webhook batch (issue 6)
  ) STRICT;
  CREATE INDEX events_pending ON events(account_id, batch_id, id);

  -- SMTP log: one row per message x recipient, updated with the latest attempt (outbound log search, api.md §6).
  CREATE TABLE smtp_log (
    delivery_id INTEGER PRIMARY KEY,     -- same id as deliveries.id; survives pruning of the delivery
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    message_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    rcpt TEXT NOT NULL,
    auth TEXT,
    upstream TEXT,
    upstream_hostname TEXT,
    sender_id TEXT,
    subject TEXT,
    size INTEGER NOT NULL,
    lastcmd TEXT,
    rspcode INTEGER,
    rspmsg TEXT,
    delivered INTEGER NOT NULL DEFAULT 0,
    spam_disposition TEXT NOT NULL DEFAULT 'UNKNOWN',
    virus_disposition TEXT NOT NULL DEFAULT 'UNKNOWN',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX smtp_log_account_time ON smtp_log(account_id, created_at);
  `;
