// Owns the SQL of migration 10 (user_version 10): custom tracking domains.
// 10: custom tracking domains (issue 13, api.md §2.4) — an account's own host names for click, open and unsubscribe
// links. A (hostname, scope) pair belongs to one account (the tracker finds it by Host); a name is unique per account.
export const TRACKING_DOMAINS = `
  CREATE TABLE custom_tracking_domains (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,                  -- ^[a-z0-9-]{1,64}$, chosen at send time
    hostname TEXT NOT NULL,              -- lower-case A-label, no trailing dot
    scope TEXT NOT NULL CHECK (scope IN ('click', 'open', 'unsubscribe')),
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    created_at INTEGER NOT NULL,
    status_modified_at INTEGER NOT NULL,
    UNIQUE (account_id, name),
    UNIQUE (hostname, scope)
  ) STRICT;
  `;
