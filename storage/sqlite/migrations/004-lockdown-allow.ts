// Owns the SQL of migration 4 (user_version 4): the operator's Domain Lockdown allow-list.
// 4: Domain Lockdown allow-list kept by the operator (`sluice lockdown allow`), beside the DNS TXT authorization.
export const LOCKDOWN_ALLOW = `
  CREATE TABLE lockdown_allow (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain TEXT NOT NULL,                -- lower-case A-label
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, domain)
  ) STRICT;
  `;
