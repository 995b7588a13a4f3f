// Owns the SQL of migration 39 (issue 37): quarantine digests. Each inbound domain's digest setting (a Sluice
// extension of its settings: how often, and whether its admins get the whole domain's), when the digest job last
// went through the domain's held mail (a round), and when each address last got a digest (so a round cut short by a
// crash sends nobody the same digest twice, and a recipient's next digest lists only what came since).
export const QUARANTINE_DIGESTS = `
  ALTER TABLE inbound_domains ADD COLUMN digest_interval TEXT NOT NULL DEFAULT 'daily'
    CHECK (digest_interval IN ('hourly', 'daily', 'weekly', 'off'));
  ALTER TABLE inbound_domains ADD COLUMN digest_admins INTEGER NOT NULL DEFAULT 0 CHECK (digest_admins IN (0, 1));
  CREATE TABLE quarantine_digest_rounds (
    domain_id INTEGER PRIMARY KEY REFERENCES inbound_domains(id) ON DELETE CASCADE,
    ran_at INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE quarantine_digest_sent (
    domain_id INTEGER NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    address TEXT NOT NULL,
    sent_at INTEGER NOT NULL,
    PRIMARY KEY (domain_id, address)
  ) STRICT;
`;
