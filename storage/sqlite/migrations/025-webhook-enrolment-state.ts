// Owns the SQL of migration 25: an endpoint's enrolment as a mark on the events it must never receive, not an id.
// 25: events pending when an endpoint was enrolled are marked there and then (events.batch_id = 0, SKIPPED_BATCH in
// storage/ports/webhooks.ts) instead of being told apart by `id > webhooks.events_after`: ids are taken at insert,
// and on PostgreSQL an event with a lower id may commit after the enrolment (issue 33, order without row ids). Each
// enrolment gets an identity (webhooks.enrolment, per account, never reused while a batch names it) that a batch
// chain records, so a retry after the endpoint was replaced ends the chain without comparing event ids. The events
// an existing endpoint skipped by id are marked now; existing endpoints and chains share enrolment 0, as before.
// webhooks.events_after stays, unread.
export const WEBHOOK_ENROLMENT_STATE = `
  ALTER TABLE webhooks ADD COLUMN enrolment INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE webhook_batches ADD COLUMN enrolment INTEGER NOT NULL DEFAULT 0;
  UPDATE events SET batch_id = 0
    WHERE batch_id IS NULL AND id <= (SELECT w.events_after FROM webhooks w WHERE w.account_id = events.account_id);
  `;
