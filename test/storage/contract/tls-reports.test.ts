// Holds the TLS report port's contract (storage/ports/tls-reports.ts) for every backend: counts add up per key across
// nodes, a day's unreported domains, one node marks a report sent, old days are pruned.
import { contract } from './backends.js';

const count = (over: Partial<Record<string, unknown>> = {}) => ({
  policyDomain: 'a.test', day: '2026-12-01', policyType: 'sts' as const, policyText: '["version: STSv1"]', mxHost: 'mx.a.test',
  receivingIp: '192.0.2.1', result: 'success', sessions: 1, ...over,
});

contract('TLS results: sessions add up per key on every node; one node marks a report sent; old days pruned', async (t, { store, reopen }) => {
  const other = await reopen();
  await store.tlsReports.add([count(), count({ result: 'certificate-expired', sessions: 2 })]);
  await other.tlsReports.add([count({ sessions: 3, policyText: '["version: STSv1","mode: enforce"]' }), count({ policyDomain: 'b.test' })]);
  await store.tlsReports.add([count({ day: '2026-11-01', policyDomain: 'old.test' })]);
  await store.tlsReports.add([]);
  t.same(await store.tlsReports.unreported('2026-12-01'), ['a.test', 'b.test']);
  t.same(
    (await other.tlsReports.resultsOf('2026-12-01', 'a.test')).map((c) => [c.result, c.sessions, c.policyText]),
    [['certificate-expired', 2, '["version: STSv1"]'], ['success', 4, '["version: STSv1","mode: enforce"]']],
    'summed; the latest policy text kept',
  );
  t.equal(await store.tlsReports.markSent('2026-12-01', 'a.test', 5), true);
  t.equal(await other.tlsReports.markSent('2026-12-01', 'a.test', 6), false, 'sent once, whichever node asks');
  t.same(await other.tlsReports.unreported('2026-12-01'), ['b.test']);
  t.equal(await store.tlsReports.prune('2026-11-15'), 1, 'the old day goes');
  t.same(await store.tlsReports.unreported('2026-11-01'), []);
});
