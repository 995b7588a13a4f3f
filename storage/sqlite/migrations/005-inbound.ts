// Owns the SQL of migration 5 (user_version 5): inbound provisioning (plans, domains, aliases, downstreams, lists).
// 5: inbound provisioning (issue 5) — subscription plans (one shared default plan), domains with their abuse
// settings and optional bound API key, admins, globally unique aliases, downstream addresses, safelist/blocklist
// entries at three levels, and false positive/negative reports kept for the operator.
export const INBOUND = `
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
  `;
