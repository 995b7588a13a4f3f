// Checks the classifier's pure parts: the tokenizer (what it reads and what it skips), the chi-square combination,
// the probability bands, and how the spam step records the judgement.
import t from 'tap';
import { BAYES_BANDS, bayesSymbol, chi2Q, combine, learnItem, type BayesResult } from '../../filters/bayes.js';
import { decodeEncodedWords, htmlText, tokenizeMessage } from '../../filters/bayes-tokens.js';
import { decideSpam } from '../../filters/inbound-verdicts.js';

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'));

t.test('the tokenizer reads subject, sender, body words and bigrams, links and attachments, and skips trace fields', async (t) => {
  const raw = crlf([
    'Received: from relay.example by mx.example; Sun, 22 Nov 2026 12:00:00 +0000',
    'X-Spam-Status: Yes, score=12',
    'Delivered-To: bob@corp.test',
    'From: "Cheap Deals" <deals@offers.example.co.uk>',
    'Subject: =?utf-8?B?R3LDvMOfZSBhdXMgWsO8cmljaA==?=',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<html><style>.x{color:red}</style><script>var hidden=1</script><p>Buy <b>cheap</b> pills &amp; more</p>',
    '<a href="http://shop.pills.example/buy">here</a> <a href="http://192.0.2.9/x">ip</a></html>',
    '--b',
    'Content-Type: application/octet-stream; name="invoice.pdf.exe"',
    'Content-Transfer-Encoding: base64',
    '',
    'TVqQAAMAAAAEAAAA',
    '--b--',
    '',
  ]);
  const tokens = new Set(tokenizeMessage(raw));
  for (const tok of ['S:grüße', 'S:zürich', 'S1:grüße\u0001aus', 'Fa:deals@offers.example.co.uk', 'Fd:example.co.uk', 'F:cheap', 'B:buy',
    'B:cheap', 'B1:cheap\u0001pills', 'B:more', 'H:p', 'U:shop.pills.example', 'U:site:pills.example', 'U:ip-literal',
    'A:application/octet-stream', 'A:.exe', 'P:html-only', 'N:from']) {
    t.ok(tokens.has(tok), tok);
  }
  for (const tok of ['N:received', 'N:x-spam-status', 'N:delivered-to', 'B:hidden', 'B:color', 'B:var', 'B:relay.example']) {
    t.notOk(tokens.has(tok), `no ${tok}`);
  }
  t.equal(learnItem(raw, 'spam').digest, learnItem(Buffer.concat([Buffer.from('Received: from elsewhere\r\n'), raw]), 'spam').digest,
    'a trace field more (our own Received, Authentication-Results) leaves the message the same one to learn');
});

t.test('encoded words, HTML text and entities', async (t) => {
  t.equal(decodeEncodedWords('=?iso-8859-1?Q?Caf=E9_cr=E8me?= ok'), 'Café crème ok');
  t.equal(decodeEncodedWords('=?x-unknown?B?YWJj?='), 'abc', 'an unknown charset reads as latin1');
  t.equal(htmlText('<p>a&lt;b&#33;&#x41;</p><!-- hid -->').trim(), 'a<b!A');
});

t.test('chi-square survival and the Fisher combination', async (t) => {
  t.equal(chi2Q(0, 2), 1);
  t.ok(Math.abs(chi2Q(4, 2) - Math.exp(-2)) < 1e-12, 'two degrees of freedom: e^(-x/2)');
  t.ok(chi2Q(2000, 600) > 0 && chi2Q(2000, 600) < 1e-100, 'no underflow to zero with hundreds of tokens');
  const learned = { spam: 100, ham: 100 };
  const spammy = new Map(['a', 'b', 'c'].map((x) => [x, { spam: 90, ham: 1 }]));
  const hammy = new Map(['a', 'b', 'c'].map((x) => [x, { spam: 1, ham: 90 }]));
  t.ok(combine(['a', 'b', 'c'], { learned, tokens: spammy }).probability > 0.99);
  t.ok(combine(['a', 'b', 'c'], { learned, tokens: hammy }).probability < 0.01);
  t.same(combine(['z'], { learned, tokens: spammy }), { probability: 0.5, used: 0 }, 'no known token: no opinion');
  const neutral = new Map([['n', { spam: 50, ham: 50 }]]);
  t.equal(combine(['n'], { learned, tokens: neutral }).used, 0, 'a token at 0.5 is not a discriminator');
});

t.test('bands and the spam step: the symbol joins the rules; an abstention adds nothing but is recorded', async (t) => {
  const judged = (probability: number): BayesResult => ({ abstained: false, probability, tokens: 10, learned: { spam: 300, ham: 300 }, scope: 'global' });
  // The scores are fitted (filters/rule-weights.ts); the bands' order and signs are what the classifier promises.
  const band = (name: string) => ({ name, score: BAYES_BANDS.find((b) => b.name === name)!.score });
  t.same(bayesSymbol(judged(0.9999)), band('BAYES_SPAM'));
  t.same(bayesSymbol(judged(1)), band('BAYES_SPAM'));
  t.same(bayesSymbol(judged(0.999)), band('BAYES_99'));
  t.same(bayesSymbol(judged(0.95)), band('BAYES_90'));
  t.same(bayesSymbol(judged(0.7)), band('BAYES_60'));
  t.same(bayesSymbol(judged(0.5)), { name: 'BAYES_UNSURE', score: 0 }, 'no opinion (combine with no decisive token) adds nothing');
  t.same(bayesSymbol(judged(0.55)), { name: 'BAYES_UNSURE', score: 0 });
  t.same(bayesSymbol(judged(0.3)), { name: 'BAYES_UNSURE', score: 0 });
  t.same(bayesSymbol(judged(0.05)), band('BAYES_PROBABLE_HAM'));
  t.same(bayesSymbol(judged(0)), band('BAYES_HAM'));
  const scores = BAYES_BANDS.map((b) => b.score);
  t.same([...scores].sort((a, b) => a - b), scores, 'a band nearer spam never scores less');
  t.ok(band('BAYES_SPAM').score >= 5, 'a certain spam verdict decides alone');
  t.ok(band('BAYES_99').score < 5, 'a probable spam verdict needs a rule to agree');
  t.ok(band('BAYES_60').score > 0 && band('BAYES_60').score <= 2, 'leaning to spam tips only a message rules already suspect');
  for (let i = 1; i < BAYES_BANDS.length; i++) t.equal(BAYES_BANDS[i]!.from, BAYES_BANDS[i - 1]!.to, 'the bands tile [0, 1] with no gap');
  t.ok(band('BAYES_HAM').score < 0 && band('BAYES_HAM').score >= -3, 'a certain ham verdict takes points off, never enough to save a DMARC reject failure (10)');
  const abstained: BayesResult = { abstained: true, reason: 'too-few-learned', learned: { spam: 3, ham: 0 } };
  t.equal(bayesSymbol(abstained), undefined);

  const base = { builtin: { score: 1, rules: [{ name: 'MISSING_DATE', score: 1 }] }, threshold: 5, needed: true, scannerFailure: 'tempfail' as const };
  const spam = decideSpam({ ...base, bayes: judged(0.9999) });
  t.match(spam, { verdict: 'spam', reason: 'spam-score', score: 1 + band('BAYES_SPAM').score, bayes: { probability: 0.9999 } });
  t.same(spam.rules.map((r) => r.name), ['MISSING_DATE', 'BAYES_SPAM']);
  const ham = decideSpam({ ...base, builtin: { score: 5, rules: [{ name: 'SPF_FAIL', score: 3 }, { name: 'MISSING_DATE', score: 2 }] }, bayes: judged(0.001) });
  t.match(ham, { verdict: 'ham', score: 5 + band('BAYES_HAM').score }, 'the owner\'s training takes points off');
  // Probable spam (0.99–0.9999) is spam only with a rule point or so to agree; alone it is not.
  const alone = decideSpam({ ...base, builtin: { score: 0, rules: [] }, bayes: judged(0.999) });
  t.match(alone, { verdict: 'ham', score: band('BAYES_99').score });
  t.match(decideSpam({ ...base, bayes: judged(0.999) }), { verdict: 'spam', score: 1 + band('BAYES_99').score });
  const none = decideSpam({ ...base, bayes: abstained });
  t.match(none, { verdict: 'ham', score: 1, bayes: { abstained: true, reason: 'too-few-learned' } });
  t.same(none.rules.map((r) => r.name), ['MISSING_DATE']);
});
