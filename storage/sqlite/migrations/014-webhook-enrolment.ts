// Owns the SQL of migration 14 (user_version 14): the event an endpoint's enrolment starts after.
// 14: an endpoint receives the events that happen after it was enrolled (issue 23) — the account's events up to
// the newest one at enrolment are never posted to it (POST /tx/v1/webhook-batch/{id}/resend is how a customer asks
// for the past). Endpoints enrolled before this migration keep receiving everything pending (0: no event skipped).
export const WEBHOOK_ENROLMENT = `
  ALTER TABLE webhooks ADD COLUMN events_after INTEGER NOT NULL DEFAULT 0;  -- events.id at enrolment; later ids only
  `;
