// Owns the PostgreSQL smtp_log table: one row per message × recipient, written by the accept, updated per attempt
// (the columns the queue writes; the log's search indexes are the smtp log's to add here).
export const SMTP_LOG_SCHEMA = `
  CREATE TABLE smtp_log (
    delivery_id bigint PRIMARY KEY,      -- same id as deliveries.id; survives pruning of the delivery
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
  CREATE INDEX smtp_log_account_time ON smtp_log(account_id, created_at);
`;
