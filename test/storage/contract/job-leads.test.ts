// Contract of the JobLeads port on every backend: one leader per job among the processes (nodes) on one store, the
// lead renewed by its holder, taken over once it lapses, and free at once when its holder resigns.
import { contract } from './backends.js';

contract('one leader per job: renewed by its holder, refused to others until it lapses, free after a resign', async (t, { store, reopen }) => {
  const other = await reopen();
  t.equal(await store.jobLeads.tryLead('housekeeping', 'a', 1_000, 60_000), true, 'a free job is taken');
  t.equal(await other.jobLeads.tryLead('housekeeping', 'b', 1_001, 60_000), false, 'another process is refused while it runs');
  t.equal(await other.jobLeads.tryLead('acme', 'b', 1_001, 60_000), true, 'another job is its own lead');
  t.equal(await store.jobLeads.tryLead('housekeeping', 'a', 40_000, 60_000), true, 'the holder renews');
  t.equal(await other.jobLeads.tryLead('housekeeping', 'b', 99_999, 60_000), false, 'still held: renewed until 100,000');
  t.equal(await other.jobLeads.tryLead('housekeeping', 'b', 100_000, 60_000), true, 'lapsed at its end: taken over');
  t.equal(await store.jobLeads.tryLead('housekeeping', 'a', 100_001, 60_000), false, 'the old holder has lost it');
  await store.jobLeads.resign('housekeeping', 'a');
  t.equal(await store.jobLeads.tryLead('housekeeping', 'a', 100_002, 60_000), false, 'resigning a lead one does not hold changes nothing');
  await other.jobLeads.resign('housekeeping', 'b');
  t.equal(await store.jobLeads.tryLead('housekeeping', 'a', 100_003, 60_000), true, 'free at once after its holder resigned');
});

contract('processes trying at once: exactly one leads', async (t, { store, reopen }) => {
  const views = [store, await reopen(), await reopen()];
  const got = await Promise.all(views.map((v, i) => v.jobLeads.tryLead('retention', `p${i}`, 5_000, 60_000)));
  t.equal(got.filter(Boolean).length, 1, `one of ${JSON.stringify(got)}`);
});

contract('a holder known to be dead is replaced at once; the holder is readable', async (t, { store, reopen }) => {
  const other = await reopen();
  t.equal(await store.jobLeads.leader('housekeeping'), undefined, 'no one yet');
  await store.jobLeads.tryLead('housekeeping', 'host:1:dead', 1_000, 60_000);
  t.same(await other.jobLeads.leader('housekeeping'), { owner: 'host:1:dead', until: 61_000 });
  t.equal(await other.jobLeads.tryLead('housekeeping', 'host:2:new', 2_000, 60_000, 'host:9:other'), false, 'replacing someone else changes nothing');
  t.equal(await other.jobLeads.tryLead('housekeeping', 'host:2:new', 2_000, 60_000, 'host:1:dead'), true, 'replacing the holder takes the lead');
  t.same(await store.jobLeads.leader('housekeeping'), { owner: 'host:2:new', until: 62_000 });
});
