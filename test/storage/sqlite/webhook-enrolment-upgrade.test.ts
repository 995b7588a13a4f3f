// Checks migration 25 on a store enrolled by id (events_after): the events an endpoint skipped by id stay skipped
// and are pruned, the later ones are still posted, and an outstanding chain of that enrolment is still retried.
import t from 'tap';
import { openDatabase } from '../../../storage/sqlite/database.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { tempDir } from '../../helpers/stack.js';

t.test('after migration 25 an endpoint enrolled by id receives exactly what it did before', async (t) => {
  const dir = tempDir(t);
  const old = openDatabase(dir, { upTo: 24 });
  let acct = 0;
  old.transaction(() => {
    acct = (old.prepare("INSERT INTO accounts (handle, created_at) VALUES ('acme', 0) RETURNING id").get() as { id: number }).id;
    const ev = old.prepare("INSERT INTO events (account_id, event, payload, created_at, batch_id) VALUES (?, 'processed', ?, ?, ?) RETURNING id");
    // A chain of the old enrolment, waiting for its retry, then two events from before the enrolment and one after.
    const chained = (ev.get(acct, '{"n":0}', 50, null) as { id: number }).id;
    const batch = (old.prepare(
      `INSERT INTO webhook_batches (account_id, webhook, kind, events_of, event_count, attempt, chain_started_at, status, retry_due_at, created_at, lease_token)
       VALUES (?, 'https://hooks.acme.test/', 'dispatch', 0, 1, 1, 60, '5xx_response', 500, 60, 1) RETURNING id`,
    ).get(acct) as { id: number }).id;
    old.prepare('UPDATE webhook_batches SET events_of = id WHERE id = ?').run(batch);
    old.prepare('UPDATE events SET batch_id = ? WHERE id = ?').run(batch, chained);
    old.prepare('INSERT INTO webhook_batch_events (batch_id, event_id) VALUES (?, ?)').run(batch, chained);
    ev.get(acct, '{"n":1}', 100, null);
    const last = (ev.get(acct, '{"n":2}', 100, null) as { id: number }).id;
    old.prepare("INSERT INTO webhooks (account_id, url, created_at, events_after) VALUES (?, 'https://hooks.acme.test/', 150, ?)").run(acct, last);
    ev.get(acct, '{"n":3}', 200, null);
  })();
  old.close();

  const store = openSqliteStore(dir, { now: () => 1_000 });
  t.teardown(() => store.close());
  const wh = store.webhooks;
  t.equal(await wh.pendingCount(), 1, 'only the event after the enrolment is pending');
  const [due] = await wh.dueRetries(500, 10);
  const retry = await wh.claimRetry(due!, (await wh.findWebhook(acct))!, 'w1', 500, 60_500);
  t.same(retry?.payloads.map((p) => (JSON.parse(p) as { n: number }).n), [0], 'the old chain is still retried to its endpoint');
  await wh.recordResult(retry!.lease, { status: '2xx_response', statusCode: 200, durationMs: 1, retryDueAt: null });
  const next = await wh.claimPending(acct, 'https://hooks.acme.test/', 'w1', 600, 10, 60_600);
  t.same(next?.payloads.map((p) => (JSON.parse(p) as { n: number }).n), [3], 'then the later event, never the skipped ones');
  t.equal(await wh.prune({ unenrolledBefore: 150, finishedBefore: 0 }, 10), 2, 'the skipped events are pruned as unreceivable');
});
