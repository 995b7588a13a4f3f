// Owns the SQL of migration 42 (issue 38 item 3): the audit log, one row per change made through the API, the console
// or the CLI: who, what (a method and route template or a CLI command, and the target's id; never a body or a
// secret), when, from which address, and how it ended.
// account_id is the account the change was made as or on (NULL for an operator's CLI command that names none);
// key_id the API key (REST, a tenant's console session); actor names the operator token or the CLI's OS user.
// (account_id, id) serves a tenant's listing newest first; at serves retention and the operator's time window.
export const AUDIT_LOG = `
  CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    via TEXT NOT NULL CHECK (via IN ('api', 'console', 'cli')),
    actor_kind TEXT NOT NULL CHECK (actor_kind IN ('key', 'operator', 'cli')),
    actor TEXT NOT NULL,
    account_id INTEGER REFERENCES accounts(id),
    key_id INTEGER,
    action TEXT NOT NULL,
    target TEXT,
    address TEXT NOT NULL,
    status INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX audit_log_account ON audit_log(account_id, id);
  CREATE INDEX audit_log_at ON audit_log(at);
  `;
