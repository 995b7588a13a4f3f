// Checks that retention bounds what a tenant grows through the inbound API (issue 31): reports go after
// retention.report_days, the classifier's tokens seen in one message after retention.bayes_token_days and its
// learned-message records after retention.bayes_learned_days, through the real stack, API and store.
import t from 'tap';
import { startStack, type Stack } from '../../helpers/stack.js';

const DAY = 86_400_000;

async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { id: acct.id, key: k.value.key };
}

function report(stack: Stack, key: string, subject: string, body: string) {
  stack.clock.advance(1000);
  return stack.api('POST', '/inbound/v1/report?report_type=false_negative', {
    key,
    body: { messageContent: `From: a@spam.test\r\nSubject: ${subject}\r\n\r\n${body}\r\n` },
  });
}

const count = (stack: Stack, table: string) => (stack.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

t.test('reports go after retention.report_days; the newer stay', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_REPORT_DAYS: '2' } });
  const a = await tenant(stack, 'acme');
  for (const s of ['one', 'two', 'three']) t.equal((await report(stack, a.key, s, 'buy now')).status, 204);
  stack.clock.advance(1.5 * DAY);
  t.equal((await report(stack, a.key, 'four', 'buy now')).status, 204);
  t.match(await stack.retention.runOnce(), { reports: 0 }, '1.5 days old: kept');
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { reports: 3 }, '2.5 days old: gone');
  const left = stack.db.prepare('SELECT message_content FROM inbound_reports').pluck().all() as string[];
  t.equal(left.length, 1);
  t.match(left[0], /Subject: four/, 'the report inside the window stays');
});

t.test('rare classifier tokens go after retention.bayes_token_days, learned records after bayes_learned_days', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_BAYES_TOKEN_DAYS: '3', SLUICE_RETENTION_BAYES_LEARNED_DAYS: '5' } });
  const a = await tenant(stack, 'acme');
  // Two reports sharing most words: their common tokens are counted twice; each subject's are rare (seen once).
  t.equal((await report(stack, a.key, 'zanzibar', 'cheap pills online now')).status, 204);
  t.equal((await report(stack, a.key, 'quixotic', 'cheap pills online now')).status, 204);
  const before = (await stack.store.bayes.stats(a.id)).tokens;
  const common = (stack.db.prepare('SELECT count(*) AS n FROM bayes_tokens WHERE spam + ham >= 2').get() as { n: number }).n;
  t.ok(common > 0 && before > common, `${before} tokens, ${common} of them seen in both`);
  stack.clock.advance(2 * DAY);
  t.match(await stack.retention.runOnce(), { bayesTokens: 0, bayesLearned: 0 }, 'two days: nothing goes');
  stack.clock.advance(2 * DAY);
  const run = await stack.retention.runOnce();
  t.equal(run.bayesTokens, before - common, 'four days: the tokens seen once go');
  t.equal(run.bayesLearned, 0, 'the learned records are younger than five days');
  const after = await stack.store.bayes.stats(a.id);
  t.equal(after.tokens, common, 'the tokens seen in both reports stay');
  t.same(after.learned, { spam: 2, ham: 0 }, 'the learned totals are not forgotten');
  stack.clock.advance(2 * DAY);
  t.match(await stack.retention.runOnce(), { bayesLearned: 2 }, 'six days: the learned-message records go');
  t.equal(count(stack, 'bayes_learned'), 0);
});
