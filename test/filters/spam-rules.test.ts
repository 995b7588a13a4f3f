// Checks the built-in spam rules: GTUBE, authentication failures, DMARC p=reject, header anomalies, and the sum.
import t from 'tap';
import type { AuthResults } from '../../filters/inbound-auth.js';
import { splitMessage } from '../../filters/message-headers.js';
import { GTUBE, scoreMessage, SPAM_RULES } from '../../filters/spam-rules.js';

const CLEAN_HEADERS = 'From: a@sender.test\r\nTo: b@corp.test\r\nSubject: hi\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <1@sender.test>\r\n';

function ctx(raw: string, auth?: Partial<AuthResults>) {
  const buf = Buffer.from(raw);
  const split = splitMessage(buf);
  const base: AuthResults = {
    spf: { result: 'pass', domain: 'sender.test' },
    dkim: [{ result: 'pass', domain: 'sender.test', selector: 's', aligned: true }],
    dmarc: { result: 'pass', domain: 'sender.test', policy: 'reject' },
    arc: { result: 'none' },
  };
  return { auth: { ...base, ...auth }, headers: split.headers, body: buf.subarray(split.bodyOffset) };
}
const names = (r: { rules: { name: string }[] }) => r.rules.map((x) => x.name);

t.test('a clean, authenticated message scores 0', async (t) => {
  t.same(scoreMessage(ctx(`${CLEAN_HEADERS}\r\nhello\r\n`)), { score: 0, rules: [] });
});

t.test('GTUBE in the body scores 1000', async (t) => {
  const r = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nxx ${GTUBE} yy\r\n`));
  t.same(names(r), ['GTUBE']);
  t.equal(r.score, 1000);
});

t.test('GTUBE in a header only does not count (body rule)', async (t) => {
  t.same(names(scoreMessage(ctx(`${CLEAN_HEADERS}X-Test: ${GTUBE}\r\n\r\nhello\r\n`))), []);
});

t.test('DMARC failure under p=reject is spam on its own', async (t) => {
  const r = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nx\r\n`, { dmarc: { result: 'fail', domain: 'bank.test', policy: 'reject' } }));
  t.same(names(r), ['DMARC_REJECT_FAIL']);
  t.ok(r.score >= 5);
  const q = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nx\r\n`, { dmarc: { result: 'fail', domain: 'b.test', policy: 'quarantine' } }));
  t.same(names(q), ['DMARC_QUARANTINE_FAIL']);
  const n = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nx\r\n`, { dmarc: { result: 'fail', domain: 'b.test', policy: 'none' } }));
  t.same(names(n), ['DMARC_NONE_FAIL']);
});

t.test('SPF and DKIM failures add up', async (t) => {
  const r = scoreMessage(
    ctx(`${CLEAN_HEADERS}\r\nx\r\n`, {
      spf: { result: 'fail', domain: 'sender.test' },
      dkim: [{ result: 'fail', domain: 'sender.test', selector: 's', aligned: false }],
      dmarc: { result: 'none', domain: null, policy: null },
    }),
  );
  t.same(names(r), ['SPF_FAIL', 'DKIM_FAIL']);
  t.equal(r.score, 5);
  const soft = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nx\r\n`, { spf: { result: 'softfail', domain: 'x' } }));
  t.same(names(soft), ['SPF_SOFTFAIL']);
});

t.test('a failing signature next to a passing one is not DKIM_FAIL', async (t) => {
  const r = scoreMessage(
    ctx(`${CLEAN_HEADERS}\r\nx\r\n`, {
      dkim: [
        { result: 'fail', domain: 'a.test', selector: 's', aligned: false },
        { result: 'pass', domain: 'sender.test', selector: 's', aligned: true },
      ],
    }),
  );
  t.same(names(r), []);
});

t.test('header anomalies', async (t) => {
  t.same(names(scoreMessage(ctx('To: b@corp.test\r\nSubject: x\r\n\r\nbody\r\n'))), [
    'MISSING_FROM',
    'MISSING_DATE',
    'MISSING_MESSAGE_ID',
  ]);
  t.same(names(scoreMessage(ctx(`${CLEAN_HEADERS}From: c@other.test\r\n\r\nbody\r\n`))), ['MULTIPLE_FROM']);
  t.same(names(scoreMessage(ctx(`${CLEAN_HEADERS}Subject: again\r\n\r\nbody\r\n`))), ['MULTIPLE_UNIQUE_HEADER']);
  t.same(names(scoreMessage(ctx(`${CLEAN_HEADERS}Date: Mon, 23 Nov 2026 12:00:00 +0000\r\n\r\nbody\r\n`))), ['MULTIPLE_DATE']);
  t.same(
    names(scoreMessage(ctx(CLEAN_HEADERS.replace('From: a@sender.test', 'From: undisclosed') + '\r\nbody\r\n'))),
    ['FROM_NO_ADDRESS'],
  );
  t.same(names(scoreMessage(ctx(CLEAN_HEADERS.replace('Subject: hi\r\n', '') + '\r\nbody\r\n'))), ['MISSING_SUBJECT']);
});

t.test('rules are data: every rule has a unique upper-case name, a score and a description', async (t) => {
  const seen = new Set<string>();
  for (const r of SPAM_RULES) {
    t.match(r.name, /^[A-Z_]+$/);
    t.notOk(seen.has(r.name), `${r.name} unique`);
    seen.add(r.name);
    t.ok(r.score > 0 && r.description.length > 0, r.name);
  }
  // A rule that throws counts as not matching instead of failing the message.
  const r = scoreMessage(ctx(`${CLEAN_HEADERS}\r\nx\r\n`), [
    { name: 'BOOM', score: 1, description: 'throws', test: () => { throw new Error('x'); } },
  ]);
  t.same(r, { score: 0, rules: [] });
});
