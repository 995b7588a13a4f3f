// Owns the SQL of migration 7 (user_version 7): signed webhooks (endpoints, signing keys, batches).
// 7: signed webhooks (issue 6) — one endpoint per account, the Ed25519 signing keys (newest = current; old public
// keys stay retrievable by id), one batch row per POST attempt, and the events each batch carries.
export const WEBHOOKS = `
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
  `;
