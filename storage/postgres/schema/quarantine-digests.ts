// Owns PostgreSQL migration 15 (issue 37): quarantine digests, as SQLite's migration 39 (see there for what each
// column and table means).
export const QUARANTINE_DIGESTS_SCHEMA = `
  ALTER TABLE inbound_domains ADD COLUMN digest_interval text NOT NULL DEFAULT 'daily'
    CHECK (digest_interval IN ('hourly', 'daily', 'weekly', 'off'));
  ALTER TABLE inbound_domains ADD COLUMN digest_admins boolean NOT NULL DEFAULT false;
  CREATE TABLE quarantine_digest_rounds (
    domain_id bigint PRIMARY KEY REFERENCES inbound_domains(id) ON DELETE CASCADE,
    ran_at bigint NOT NULL
  );
  CREATE TABLE quarantine_digest_sent (
    domain_id bigint NOT NULL REFERENCES inbound_domains(id) ON DELETE CASCADE,
    address text NOT NULL,
    sent_at bigint NOT NULL,
    PRIMARY KEY (domain_id, address)
  );
`;
