// Owns the PostgreSQL tables of the queue area: messages, their bodies (inline rows, and chunked rows for large ones),
// per-recipient deliveries under leases, their attempts, and the events outbox the accept and record units append to.
export const QUEUE_SCHEMA = `
  -- One composed message (one per personalization), outbound or inbound relay.
  CREATE TABLE messages (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint REFERENCES accounts(id),   -- NULL only for system mail (DSNs)
    kind text NOT NULL CHECK (kind IN ('outbound', 'relay', 'dsn')),
    request_id text NOT NULL,
    message_id text NOT NULL,            -- Message-ID header value without <>
    mail_from text NOT NULL,             -- envelope sender; '' is the null sender <>
    from_email text,
    subject text,
    campaign_id text,
    transactional boolean NOT NULL DEFAULT true,
    size bigint NOT NULL,
    auth text,
    upstream text,
    upstream_hostname text,
    sender_id text,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,          -- queue lifetime end: undelivered recipients hard-bounce after it
    verdicts jsonb,                      -- the filtering verdicts (an array)
    tracking integer NOT NULL DEFAULT 0, -- TRACK_* bits
    body_ref text                        -- 'inline' (message_bodies), 'chunks:<key>' (body_blobs), NULL: none kept
  );
  CREATE INDEX messages_request ON messages(request_id);
  CREATE INDEX messages_sender_id ON messages(account_id, sender_id, created_at) WHERE sender_id IS NOT NULL;
  CREATE INDEX messages_chunked ON messages(body_ref) WHERE body_ref LIKE 'chunks:%';
  CREATE INDEX messages_with_body ON messages(id) WHERE body_ref IS NOT NULL;
  CREATE INDEX messages_account ON messages(account_id);

  -- A small body, written in the accept transaction; kept apart so scans of messages never page through bodies.
  CREATE TABLE message_bodies (
    message_id bigint PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    body bytea NOT NULL
  );

  -- A large body, written (and durable) before the commit that names it: its chunks, then size set once complete.
  -- A blob no message (or quarantined message) names is an orphan the sweep removes once older than its grace.
  CREATE TABLE body_blobs (
    key text PRIMARY KEY,
    created_at bigint NOT NULL,          -- wall clock at write (the sweep's grace counts from it)
    chunk_bytes integer NOT NULL,        -- every chunk but the last holds exactly this many bytes
    size bigint                          -- NULL until the last chunk is written
  );
  CREATE INDEX body_blobs_created ON body_blobs(created_at);
  CREATE TABLE body_chunks (
    key text NOT NULL REFERENCES body_blobs(key) ON DELETE CASCADE,
    seq integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (key, seq)
  );

  -- One per recipient. state: queued (due at next_attempt_at), sending (leased until lease_until =
  -- next_attempt_at), delivered, bounced, dropped (before any attempt), held.
  CREATE TABLE deliveries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    rcpt text NOT NULL,
    domain text NOT NULL,
    state text NOT NULL CHECK (state IN ('queued', 'sending', 'delivered', 'bounced', 'dropped', 'held')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at bigint NOT NULL,
    locked_by text,
    lease_until bigint,
    lease_token bigint NOT NULL DEFAULT 0,
    last_code integer,
    last_status text,
    last_response text,
    last_command text,
    last_host text,
    updated_at bigint NOT NULL
  );
  CREATE INDEX deliveries_due ON deliveries(state, next_attempt_at);
  CREATE INDEX deliveries_message ON deliveries(message_id);
  -- The claim's order (due time, then id) over unfinished rows only: a claim reads the head of this index.
  CREATE INDEX deliveries_pending ON deliveries(next_attempt_at, id) WHERE state IN ('queued', 'sending');

  CREATE TABLE delivery_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
    at bigint NOT NULL,
    outcome text NOT NULL,               -- delivered | deferred | bounced
    code integer,
    status text,
    response text,
    command text,
    host text
  );
  CREATE INDEX delivery_attempts_delivery ON delivery_attempts(delivery_id);

  -- Outbox of webhook events, written in the same transaction as the state change (api.md §4.2 fields in payload).
  CREATE TABLE events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id),
    event text NOT NULL,
    payload jsonb NOT NULL,              -- the object posted to the webhook
    created_at bigint NOT NULL,
    batch_id bigint                      -- set once delivered in a webhook batch
  );
  CREATE INDEX events_pending ON events(account_id, batch_id, id);
`;
