// Owns the SQL of migration 37 (issue 37): inbound recipients created with PUT /inbound/v1/users.
// address: lower case, on its provisioned domain (what recipient-level lists and the MX compare), unique because a
// domain has one owner; filter: 1 = the domain's policy applies (a protected address, counted against the
// subscription's max_protected_addresses), 0 = relayed unfiltered. The admin role is not a column: it is the
// address's place among inbound_domain_admins, the one record of a domain's admins.
export const INBOUND_RECIPIENTS = `
  CREATE TABLE inbound_recipients (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    domain_id INTEGER NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    address TEXT NOT NULL UNIQUE,
    filter INTEGER NOT NULL CHECK (filter IN (0, 1)),
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX inbound_recipients_account ON inbound_recipients(account_id, address);
  CREATE INDEX inbound_recipients_domain ON inbound_recipients(domain_id, address);
  `;
