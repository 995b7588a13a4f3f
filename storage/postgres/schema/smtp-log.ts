// Owns the PostgreSQL table of the SMTP log and its search indexes (SQLite migrations 2 and 3, end state).

/**
 * ASCII case folding, the only folding SQLite's NOCASE and LIKE do: lower() would also fold 'Ë' to 'ë' under most
 * locales, and the seed's search matches other letters exactly. translate() is immutable, so indexes can use it, and
 * a one-statement SQL function is inlined where it is called, so an index on the expression serves the query.
 */
export const ASCII_LOWER = 'sluice_ascii_lower';

/**
 * smtp_log: one row per delivery (delivery_id is the delivery's id, and outlives the delivery's pruning: no foreign
 * key to deliveries), written by the queue at accept and at each recorded outcome, searched by the Log port.
 *
 * Each equality filter gets (account_id, value, created_at, delivery_id): one account's matches come out in the
 * search's order, so a page stops after start_at + count entries without a sort. The case-insensitive ones index
 * the ASCII-folded value. Subject substrings: a pg_trgm GIN index on the folded subject (pg_trgm is a trusted
 * extension from PostgreSQL 13, so the database owner may create it); the search re-checks with LIKE anyway.
 */
export const SMTP_LOG_SCHEMA = `
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
  CREATE FUNCTION ${ASCII_LOWER}(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT translate($1, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') $$;
  CREATE TABLE smtp_log (
    delivery_id bigint PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id),
    message_id text NOT NULL,
    request_id text NOT NULL,
    sender text NOT NULL,
    rcpt text NOT NULL,
    auth text,
    upstream text,
    upstream_hostname text,
    sender_id text,
    subject text,
    size bigint NOT NULL,
    lastcmd text,
    rspcode integer,
    rspmsg text,
    delivered boolean NOT NULL DEFAULT false,
    spam_disposition text NOT NULL DEFAULT 'UNKNOWN',
    virus_disposition text NOT NULL DEFAULT 'UNKNOWN',
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
  );
  CREATE INDEX smtp_log_account_time ON smtp_log(account_id, created_at, delivery_id);
  CREATE INDEX smtp_log_message ON smtp_log(account_id, message_id, created_at, delivery_id);
  CREATE INDEX smtp_log_request ON smtp_log(account_id, request_id, created_at, delivery_id);
  CREATE INDEX smtp_log_sender ON smtp_log(account_id, ${ASCII_LOWER}(sender), created_at, delivery_id);
  CREATE INDEX smtp_log_rcpt ON smtp_log(account_id, ${ASCII_LOWER}(rcpt), created_at, delivery_id);
  CREATE INDEX smtp_log_auth ON smtp_log(account_id, auth, created_at, delivery_id);
  CREATE INDEX smtp_log_upstream ON smtp_log(account_id, upstream, created_at, delivery_id);
  CREATE INDEX smtp_log_upstream_hostname ON smtp_log(account_id, ${ASCII_LOWER}(upstream_hostname), created_at, delivery_id);
  CREATE INDEX smtp_log_sender_id ON smtp_log(account_id, sender_id, created_at, delivery_id);
  CREATE INDEX smtp_log_rspcode ON smtp_log(account_id, rspcode, created_at, delivery_id);
  CREATE INDEX smtp_log_spam ON smtp_log(account_id, spam_disposition, created_at, delivery_id);
  CREATE INDEX smtp_log_virus ON smtp_log(account_id, virus_disposition, created_at, delivery_id);
  -- delivered = false is rare; delivered = true is most rows, served by smtp_log_account_time.
  CREATE INDEX smtp_log_undelivered ON smtp_log(account_id, created_at, delivery_id) WHERE NOT delivered;
  CREATE INDEX smtp_log_subject ON smtp_log USING gin (${ASCII_LOWER}(subject) gin_trgm_ops);
  -- Retention: old rows across every account without a scan of the log (SQLite walks smtp_log_account_time per
  -- account instead, having no index on created_at alone).
  CREATE INDEX smtp_log_created ON smtp_log(created_at);
`;
