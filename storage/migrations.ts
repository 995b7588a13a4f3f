// Owns the schema: forward-only numbered migrations; the index + 1 is the PRAGMA user_version it leads to.

/**
 * Never edit a released migration; append a new one. Timestamps are INTEGER milliseconds since the epoch.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: accounts, API keys, SMTP passwords, usage counters, settings.
  `
  CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;

  -- A parent account has parent_id NULL. Handles are never reused, so deleted rows stay (deleted_at set).
  CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    handle TEXT NOT NULL UNIQUE,
    company_name TEXT,
    parent_id INTEGER REFERENCES accounts(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    -- monthly send limit: NULL = unlimited; -1 = inherit the parent's (sub-accounts only)
    send_limit INTEGER,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
  ) STRICT;
  CREATE INDEX accounts_parent ON accounts(parent_id);

  CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    scope TEXT NOT NULL CHECK (scope IN ('api', 'inbound')),
    key_hash TEXT NOT NULL UNIQUE,
    redacted TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT;
  CREATE INDEX api_keys_account ON api_keys(account_id, revoked_at);

  CREATE TABLE smtp_passwords (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    password_hash TEXT NOT NULL UNIQUE,
    redacted TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
  ) STRICT;
  CREATE INDEX smtp_passwords_account ON smtp_passwords(account_id, deleted_at);

  -- messages accepted for sending per account per calendar month (UTC), for limits and /usage
  CREATE TABLE usage_counters (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    period TEXT NOT NULL,
    sends INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, period)
  ) STRICT;
  `,

  // 2: outbound engine — DKIM keys, suppressions, messages and their bodies, per-recipient deliveries and attempts,
  // the events outbox and the SMTP log.
  `
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
  `,

  // 3: SMTP log search indexes (POST /outbound/v1/search). Each equality filter gets (account_id, column,
  // created_at): one account's matches come out already in created_at order (the rowid, delivery_id, is the
  // implicit last key), so a page needs no sort and stops after start_at + count rows. Addresses and host names
  // carry COLLATE NOCASE to serve case-insensitive equality.
  // delivered = 0 is rare and delivered = 1 is most rows (served by smtp_log_account_time): a partial index suffices.
  `
  CREATE INDEX smtp_log_message ON smtp_log(account_id, message_id, created_at);
  CREATE INDEX smtp_log_request ON smtp_log(account_id, request_id, created_at);
  CREATE INDEX smtp_log_sender ON smtp_log(account_id, sender COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_rcpt ON smtp_log(account_id, rcpt COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_auth ON smtp_log(account_id, auth, created_at);
  CREATE INDEX smtp_log_upstream ON smtp_log(account_id, upstream, created_at);
  CREATE INDEX smtp_log_upstream_hostname ON smtp_log(account_id, upstream_hostname COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_sender_id ON smtp_log(account_id, sender_id, created_at);
  CREATE INDEX smtp_log_rspcode ON smtp_log(account_id, rspcode, created_at);
  CREATE INDEX smtp_log_spam ON smtp_log(account_id, spam_disposition, created_at);
  CREATE INDEX smtp_log_virus ON smtp_log(account_id, virus_disposition, created_at);
  CREATE INDEX smtp_log_undelivered ON smtp_log(account_id, created_at) WHERE delivered = 0;

  -- Subject substring search: a trigram index (sqlite.org/fts5.html#the_trigram_tokenizer) finds the few rows
  -- holding a rare substring without scanning the range. External content (no second copy of the subject);
  -- detail=none and columnsize=0 keep it small: it answers "rows holding all these trigrams", and the search
  -- re-checks those candidates with LIKE on smtp_log.
  CREATE VIRTUAL TABLE smtp_log_subject USING fts5(
    subject, content='smtp_log', content_rowid='delivery_id', tokenize='trigram', detail=none, columnsize=0
  );
  CREATE TRIGGER smtp_log_subject_insert AFTER INSERT ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (rowid, subject) VALUES (new.delivery_id, new.subject);
  END;
  CREATE TRIGGER smtp_log_subject_delete AFTER DELETE ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (smtp_log_subject, rowid, subject) VALUES ('delete', old.delivery_id, old.subject);
  END;
  CREATE TRIGGER smtp_log_subject_update AFTER UPDATE OF subject ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (smtp_log_subject, rowid, subject) VALUES ('delete', old.delivery_id, old.subject);
    INSERT INTO smtp_log_subject (rowid, subject) VALUES (new.delivery_id, new.subject);
  END;
  INSERT INTO smtp_log_subject (smtp_log_subject) VALUES ('rebuild');
  `,

  // 4: Domain Lockdown allow-list kept by the operator (`sluice lockdown allow`), beside the DNS TXT authorization.
  `
  CREATE TABLE lockdown_allow (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain TEXT NOT NULL,                -- lower-case A-label
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, domain)
  ) STRICT;
  `,

  // 5: inbound provisioning (issue 5) — subscription plans (one shared default plan), domains with their abuse
  // settings and optional bound API key, admins, globally unique aliases, downstream addresses, safelist/blocklist
  // entries at three levels, and false positive/negative reports kept for the operator.
  `
  -- An operator-defined plan an account provisions domains against. account_id NULL = offered to every account.
  CREATE TABLE inbound_subscriptions (
    id INTEGER PRIMARY KEY,
    handle TEXT NOT NULL UNIQUE,
    plan_handle TEXT NOT NULL,
    plan_name TEXT NOT NULL,
    account_id INTEGER REFERENCES accounts(id),
    active INTEGER NOT NULL DEFAULT 1,
    limits TEXT NOT NULL DEFAULT '[]',   -- JSON [{featureHandle, value}]; "max_domains" is enforced per account
    created_at INTEGER NOT NULL
  ) STRICT;
  -- The default plan, created by this migration on the first start.
  INSERT INTO inbound_subscriptions (handle, plan_handle, plan_name, account_id, active, limits, created_at)
    VALUES ('default', 'default', 'Default', NULL, 1, '[]', CAST(strftime('%s', 'now') AS INTEGER) * 1000);

  CREATE TABLE inbound_domains (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain TEXT NOT NULL UNIQUE,         -- lower-case A-label without trailing dot; one owner in the whole install
    subscription_id INTEGER NOT NULL REFERENCES inbound_subscriptions(id),
    api_key_id INTEGER REFERENCES api_keys(id),  -- set by associate-key=true: only this key may manage the domain
    abuse_policy TEXT CHECK (abuse_policy IN ('block', 'flag', 'quarantine')),
    abuse_policy_override INTEGER,       -- 1: the domain's policy (and lists) win over the recipient's
    spam_header_name TEXT,
    spam_header_value TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_domains_account ON inbound_domains(account_id, domain);

  CREATE TABLE inbound_domain_admins (
    domain_id INTEGER NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    PRIMARY KEY (domain_id, email)
  ) STRICT;

  -- Mail for an alias is accepted and routed like mail for its domain. An alias is never also a domain.
  CREATE TABLE inbound_aliases (
    alias TEXT PRIMARY KEY,              -- lower-case A-label, globally unique
    domain_id INTEGER NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_aliases_domain ON inbound_aliases(domain_id);

  CREATE TABLE inbound_downstreams (
    id INTEGER PRIMARY KEY,
    domain_id INTEGER NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,           -- order as submitted
    priority INTEGER NOT NULL,           -- lowest first (RFC 2782 style)
    weight INTEGER NOT NULL,             -- proportional choice among equal priority
    port INTEGER NOT NULL,
    target TEXT NOT NULL                 -- FQDN ending in "." or an IP literal
  ) STRICT;
  CREATE INDEX inbound_downstreams_domain ON inbound_downstreams(domain_id, position);

  -- Safelist/blocklist entries. scope: '' (account level), the domain name (domain level) or the recipient address
  -- (recipient level); domain_id makes domain and recipient entries go away with their domain.
  -- ip_address items (single addresses and CIDR ranges) carry their range as 16-byte keys (IPv4 mapped into
  -- ::ffff:0:0/96), so a client address matches with ip_start <= key <= ip_end (BLOBs compare bytewise).
  CREATE TABLE inbound_list_entries (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    level TEXT NOT NULL CHECK (level IN ('account', 'domain', 'recipient')),
    scope TEXT NOT NULL,
    domain_id INTEGER REFERENCES inbound_domains(id) ON DELETE CASCADE,
    item TEXT NOT NULL,
    item_type TEXT NOT NULL CHECK (item_type IN ('domain', 'email_address', 'ip_address')),
    action TEXT NOT NULL CHECK (action IN ('blocklist', 'safelist')),
    ip_start BLOB,
    ip_end BLOB,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, level, scope, item)
  ) STRICT;
  CREATE INDEX inbound_list_entries_domain ON inbound_list_entries(domain_id);
  CREATE INDEX inbound_list_entries_ip ON inbound_list_entries(account_id, level, scope, ip_start)
    WHERE item_type = 'ip_address';

  CREATE TABLE inbound_reports (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    api_key_id INTEGER,
    report_type TEXT NOT NULL CHECK (report_type IN ('false_positive', 'false_negative')),
    message_content TEXT NOT NULL,
    ehlo TEXT,
    mail_from TEXT,
    rcpt_to TEXT,
    sending_host TEXT,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_reports_created ON inbound_reports(created_at);
  `,

  // 6: inbound quarantine (issue 5) — messages held by a domain's abuse policy, with their envelope, the verdict of
  // every filtering step and a release lease (relayed once), kept until expires_at (inbound.quarantine_days).
  // (Planned as 7 after the webhooks migration; that one had not landed yet, so this one took the next number.)
  `
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
  `,

  // 7: signed webhooks (issue 6) — one endpoint per account, the Ed25519 signing keys (newest = current; old public
  // keys stay retrievable by id), one batch row per POST attempt, and the events each batch carries.
  `
  CREATE TABLE webhooks (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id),  -- one endpoint per account (api.md §2.2: 409 for a second)
    url TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE webhook_signing_keys (
    seq INTEGER PRIMARY KEY,             -- the highest is the current key
    key_id TEXT NOT NULL UNIQUE,         -- the keyid= of Signature-Input and ?id= of the public-key endpoints
    private_key TEXT NOT NULL,           -- PKCS#8 PEM; never leaves the server
    public_key TEXT NOT NULL,            -- SPKI PEM, as GET /tx/v1/webhook/public-key returns it
    created_at INTEGER NOT NULL
  ) STRICT;

  -- One row per POST attempt. events_of names the batch whose webhook_batch_events rows list the events carried:
  -- the batch itself for a fresh claim; the first batch of the chain for a retry; the resent batch's for a resend.
  -- retry_due_at is set while the chain is outstanding: the lease of an attempt in flight (status NULL), then the
  -- time of the next retry after a failure; NULL once delivered, given up, or for resends (never retried).
  CREATE TABLE webhook_batches (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    webhook TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('dispatch', 'resend')),
    events_of INTEGER NOT NULL,
    event_count INTEGER NOT NULL,
    attempt INTEGER NOT NULL,            -- 1 for the first POST of a chain
    chain_started_at INTEGER NOT NULL,   -- first attempt of the chain: retries stop 24 h after it
    status TEXT CHECK (status IN ('1xx_response', '2xx_response', '3xx_response', '4xx_response', '5xx_response', 'no_response')),
    status_code INTEGER,
    duration_ms INTEGER,
    retry_due_at INTEGER,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX webhook_batches_account ON webhook_batches(account_id, created_at);
  CREATE INDEX webhook_batches_due ON webhook_batches(retry_due_at) WHERE retry_due_at IS NOT NULL;
  CREATE INDEX webhook_batches_created ON webhook_batches(created_at);

  -- The events of a batch chain (event rows may be pruned before their links; readers join events).
  CREATE TABLE webhook_batch_events (
    batch_id INTEGER NOT NULL REFERENCES webhook_batches(id) ON DELETE CASCADE,
    event_id INTEGER NOT NULL,
    PRIMARY KEY (batch_id, event_id)
  ) STRICT, WITHOUT ROWID;
  `,

  // 8: the inbound filtering verdicts (JSON array of step records) of a relayed message, kept with it (issue 5:
  // "each step a verdict record … stored with the message"); NULL for outbound mail and DSNs.
  `
  ALTER TABLE messages ADD COLUMN verdicts TEXT;
  `,
];
