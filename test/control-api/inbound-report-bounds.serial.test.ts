// Checks the bounds of POST /inbound/v1/report (issue 31, finding 2): the classifier learns a bounded sample of a
// report whatever its shape, the request keeps the event loop's longest stall under 100 ms (the report kept is its
// first 320 KiB), below queue.min_free_bytes a report is refused (503 + Retry-After) before it is read, nothing stored
// or learned, and an account keeps at most inbound.reports_per_account reports.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import t from 'tap';
import { REPORT_KEEP_BYTES } from '../../control-api/routes/inbound-service.js';
import { MAX_HEADER_FIELDS } from '../../filters/bayes-tokens.js';
import { startStack, type Stack } from '../helpers/stack.js';

async function tenant(stack: Stack) {
  const acct = await stack.createAccount('reportco');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { id: acct.id, key: k.value.key };
}

/** A message whose header section is `names` distinct made-up field names, then a short body. */
function manyNames(names: number): string {
  const lines: string[] = ['From: a@spam.test', 'Subject: cheap pills'];
  for (let i = 0; i < names; i++) lines.push(`X-H${i}: v`);
  return `${lines.join('\r\n')}\r\n\r\nbuy now\r\n`;
}

const reports = (stack: Stack) => (stack.db.prepare('SELECT count(*) AS n FROM inbound_reports').get() as { n: number }).n;

t.test('reports of 80,000 distinct header names: the model learns a bounded sample, the loop never stalls 100 ms', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack);
  // A first, small report: the code on the path is compiled (what a running server has done long before).
  t.equal((await stack.api('POST', '/inbound/v1/report?report_type=false_positive', { key: a.key, body: { messageContent: manyNames(3000) } })).status, 204);
  // ≈ 1 MB each; learned whole, each took over half a second before (2,000,000 names: 9.5 s). The longest stall is
  // taken as the least of five reports: our own work stalls every one of them, while a machine shared with other
  // work can deschedule this process in any one (the tests run in parallel on two cores).
  const stalls: number[] = [];
  let message = '';
  for (const word of ['alpha', 'bravo', 'charlie', 'delta', 'echo']) {
    message = `Subject: ${word}\r\n${manyNames(80_000)}`;
    // The client's part (the test's own JSON.stringify) is done before the loop is watched: it is not the server's.
    const raw = JSON.stringify({ messageContent: message });
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const r = await stack.api('POST', '/inbound/v1/report?report_type=false_negative', { key: a.key, raw, headers: { 'Content-Type': 'application/json' } });
    delay.disable();
    t.equal(r.status, 204, JSON.stringify(r.body));
    stalls.push(delay.max / 1e6);
  }
  const stats = await stack.store.bayes.stats(a.id);
  t.same(stats.learned, { spam: 5, ham: 1 }, 'every report learned');
  t.ok(stats.tokens <= MAX_HEADER_FIELDS + 30, `the model holds ${stats.tokens} tokens: the header fields read are bounded`);
  const stallMs = Math.min(...stalls);
  t.ok(stallMs < 100, `longest event-loop stall ${stallMs.toFixed(1)} ms (< 100 ms; the five: ${stalls.map((x) => x.toFixed(0)).join(', ')})`);
  t.equal(reports(stack), 6, 'all stored for the operator');
  const kept = stack.db.prepare('SELECT size, length(CAST(message_content AS BLOB)) AS kept FROM inbound_reports ORDER BY id DESC').get();
  t.same(kept, { size: Buffer.byteLength(message), kept: REPORT_KEEP_BYTES }, 'its first 320 KiB, and the size reported');
});

t.test('below queue.min_free_bytes a report is refused with 503 + Retry-After; nothing stored or learned', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_QUEUE_MIN_FREE_BYTES: String(Number.MAX_SAFE_INTEGER) } });
  const a = await tenant(stack);
  const r = await stack.api('POST', '/inbound/v1/report?report_type=false_negative', {
    key: a.key,
    body: { messageContent: 'From: a@spam.test\r\nSubject: pills\r\n\r\nbuy now\r\n' },
  });
  t.equal(r.status, 503);
  t.equal(r.headers.get('retry-after'), '30');
  t.same(r.body, { code: 503, errors: ['the mail spool is low on disk space; try again later'], message: 'the mail spool is low on disk space; try again later' }, 'the inbound group\'s shape');
  t.equal(reports(stack), 0, 'nothing stored');
  t.equal((await stack.store.bayes.stats(a.id)).learned.spam, 0, 'nothing learned');
});

t.test('an account keeps its newest inbound.reports_per_account reports; another account\'s are not touched', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_INBOUND_REPORTS_PER_ACCOUNT: '3' } });
  const a = await tenant(stack);
  const other = await stack.createAccount('otherco');
  const k = await stack.accounts.createApiKey(other.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const send = (key: string, n: number) => {
    stack.clock.advance(1000);
    return stack.api('POST', '/inbound/v1/report?report_type=false_negative', { key, body: { messageContent: `Subject: ${n}\r\n\r\nx\r\n` } });
  };
  t.equal((await send(k.value.key, 0)).status, 204);
  for (let n = 1; n <= 5; n++) t.equal((await send(a.key, n)).status, 204);
  const subjects = stack.db.prepare('SELECT message_content FROM inbound_reports WHERE account_id = ? ORDER BY id').pluck().all(a.id);
  t.same(subjects, [3, 4, 5].map((n) => `Subject: ${n}\r\n\r\nx\r\n`), 'the newest three');
  t.equal(reports(stack), 4, 'the other account keeps its one');
});

t.test('filters.bayes.max_tokens holds for a model fed by reports; the latest report\'s tokens are kept', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_FILTERS_BAYES_MAX_TOKENS: '1000' } });
  const a = await tenant(stack);
  const words = (tag: string) => Array.from({ length: 800 }, (_, i) => `${tag}${i}x`).join(' ');
  for (const [i, tag] of ['alpha', 'bravo', 'charlie'].entries()) {
    stack.clock.advance(1000);
    const r = await stack.api('POST', '/inbound/v1/report?report_type=false_negative', {
      key: a.key,
      body: { messageContent: `From: a@spam.test\r\nSubject: ${tag}\r\n\r\n${words(tag)}\r\n` },
    });
    t.equal(r.status, 204, `report ${i}`);
    t.ok((await stack.store.bayes.stats(a.id)).tokens <= 1000, 'the bound holds after every learn');
  }
  const stats = await stack.store.bayes.stats(a.id);
  t.equal(stats.tokens, 1000, 'full to the cap');
  t.equal(stats.learned.spam, 3);
  const latest = await stack.store.bayes.counts([a.id], ['B:charlie0x', 'B:charlie799x', 'B:alpha0x']);
  t.ok(latest.tokens.has('B:charlie0x') && latest.tokens.has('B:charlie799x'), 'the newest report\'s words are known');
  t.notOk(latest.tokens.has('B:alpha0x'), 'the oldest report\'s words were forgotten first');
});
