// Owns the SQL of migration 3 (user_version 3): the SMTP log search indexes.
// 3: SMTP log search indexes (POST /outbound/v1/search). Each equality filter gets (account_id, column,
// created_at): one account's matches come out already in created_at order (the rowid, delivery_id, is the
// implicit last key), so a page needs no sort and stops after start_at + count rows. Addresses and host names
// carry COLLATE NOCASE to serve case-insensitive equality.
// delivered = 0 is rare and delivered = 1 is most rows (served by smtp_log_account_time): a partial index suffices.
export const SMTP_LOG_SEARCH = `
  CREATE INDEX smtp_log_message ON smtp_log(account_id, message_id, created_at);
  CREATE INDEX smtp_log_request ON smtp_log(account_id, request_id, created_at);
  CREATE INDEX smtp_log_sender ON smtp_log(account_id, sender COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_rcpt ON smtp_log(account_id, rcpt COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_auth ON smtp_log(account_id, auth, created_at);
  CREATE INDEX smtp_log_upstream ON smtp_log(account_id, upstream, created_at);
  CREATE INDEX smtp_log_upstream_hostname ON smtp_log(account_id, upstream_hostname COLLATE NOCASE, created_at);
  CREATE INDEX smtp_log_sender_id ON smtp_log(account_id, sender_id, created_at);
  CREATE INDEX smtp_log_rspcode ON smtp_log(account_id, rspcode, created_at);
  CREATE INDEX smtp_log_spam ON smtp_log(account_id, spam_disposition, created_at);
  CREATE INDEX smtp_log_virus ON smtp_log(account_id, virus_disposition, created_at);
  CREATE INDEX smtp_log_undelivered ON smtp_log(account_id, created_at) WHERE delivered = 0;

  -- Subject substring search: a trigram index (sqlite.org/fts5.html#the_trigram_tokenizer) finds the few rows
  -- holding a rare substring without scanning the range. External content (no second copy of the subject);
  -- detail=none and columnsize=0 keep it small: it answers "rows holding all these trigrams", and the search
  -- re-checks those candidates with LIKE on smtp_log.
  CREATE VIRTUAL TABLE smtp_log_subject USING fts5(
    subject, content='smtp_log', content_rowid='delivery_id', tokenize='trigram', detail=none, columnsize=0
  );
  CREATE TRIGGER smtp_log_subject_insert AFTER INSERT ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (rowid, subject) VALUES (new.delivery_id, new.subject);
  END;
  CREATE TRIGGER smtp_log_subject_delete AFTER DELETE ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (smtp_log_subject, rowid, subject) VALUES ('delete', old.delivery_id, old.subject);
  END;
  CREATE TRIGGER smtp_log_subject_update AFTER UPDATE OF subject ON smtp_log BEGIN
    INSERT INTO smtp_log_subject (smtp_log_subject, rowid, subject) VALUES ('delete', old.delivery_id, old.subject);
    INSERT INTO smtp_log_subject (rowid, subject) VALUES (new.delivery_id, new.subject);
  END;
  INSERT INTO smtp_log_subject (smtp_log_subject) VALUES ('rebuild');
  `;
