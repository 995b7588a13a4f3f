// Tests PostgreSQL retention's walk order: messages whose ids do not follow their creation times (ids are taken at
// insert, across nodes) are walked by (created_at, id), so an old message behind a younger one's id goes in the run.
import t from 'tap';
import { openPostgresStore } from '../../../storage/postgres/store.js';
import { message } from '../../helpers/accept-record.js';
import { freshDatabase } from '../../helpers/pg-cluster.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

t.test('a message created earlier but given a larger id is pruned in the same run; a younger one stays', async (t) => {
  const url = await freshDatabase();
  const [a, b] = await Promise.all([1, 2].map(() => openPostgresStore({ url, poolSize: 2, now: () => T0 })));
  t.teardown(async () => {
    await a!.close();
    await b!.close();
  });
  const created = await a!.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: T0 });
  if (!created.ok) throw new Error(created.reason);
  const acct = created.value.id;
  /** One message created at `at`, its one delivery dropped at accept (final at once), accepted through `node`. */
  const accept = async (node: typeof a, at: number) => {
    const rec = await message(node!, acct, ['u@dest.test'], at);
    const [ids] = await node!.queue.accept([{ ...rec, deliveries: rec.deliveries.map((d) => ({ ...d, state: 'dropped' as const, status: '5.7.1', response: 'suppressed' })) }]);
    return ids!.messageRowId;
  };
  // Node a (its clock ahead) commits first: the younger message takes the smaller id.
  const young = await accept(a, T0 + 5 * DAY);
  const old = await accept(b, T0);
  t.ok(old > young, 'the fixture: ids out of creation order');
  const before = T0 + 3 * DAY;
  t.same(await b!.retention.pruneBodies({ before, limit: 100 }), { deleted: 1, next: { createdAt: T0, id: old }, done: true });
  t.same(await b!.retention.pruneMessages({ before, limit: 100 }), { deleted: 1, next: { createdAt: T0, id: old }, done: true }, 'the old message, not stopped by the younger id before it');
  t.equal(await a!.queue.findMessage(old), undefined);
  t.ok(await a!.queue.findMessage(young), 'the young message stays');
  t.same(await b!.retention.pruneMessages({ before, limit: 100, after: { createdAt: T0, id: old } }), { deleted: 0, next: { createdAt: T0, id: old }, done: true }, 'nothing left past the cursor');
});
