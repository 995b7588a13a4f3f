// Owns the SQL of migration 17 (user_version 17): one lease design for deliveries, webhook batches and alerts, and
// the body reference of a message.
// 17: every leased row carries its owner (locked_by), its expiry (lease_until) and a fencing token (lease_token,
// incremented at each claim) that recording the outcome checks (storage/ports/leases.ts). A delivery in flight keeps
// next_attempt_at = lease_until, so one index finds queued rows that are due and sending rows whose lease expired.
// messages.body_ref names where the body is: 'inline' (message_bodies), NULL when none is kept (a refused message,
// or pruned by retention); a spool adds its own values later.
export const LEASES = `
  ALTER TABLE deliveries ADD COLUMN lease_until INTEGER;
  ALTER TABLE deliveries ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
  UPDATE deliveries SET lease_until = next_attempt_at WHERE state = 'sending';
  ALTER TABLE webhook_batches ADD COLUMN locked_by TEXT;
  ALTER TABLE webhook_batches ADD COLUMN lease_until INTEGER;
  ALTER TABLE webhook_batches ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
  UPDATE webhook_batches SET lease_until = retry_due_at, lease_token = 1 WHERE status IS NULL AND retry_due_at IS NOT NULL;
  ALTER TABLE alerts ADD COLUMN locked_by TEXT;
  ALTER TABLE alerts ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE messages ADD COLUMN body_ref TEXT;
  UPDATE messages SET body_ref = 'inline' WHERE id IN (SELECT message_id FROM message_bodies);
  `;
