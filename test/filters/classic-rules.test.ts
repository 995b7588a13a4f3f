// Checks each classic header and text rule (filters/classic-headers.ts, filters/classic-text.ts) on a message that
// has the trait and on an ordinary one that has none, and that their scores come from the fitted table.
import t from 'tap';
import { CLASSIC_HEADER_RULES } from '../../filters/classic-headers.js';
import { CLASSIC_TEXT_RULES } from '../../filters/classic-text.js';
import type { ContentContext } from '../../filters/content-rules.js';
import { INBOUND_RULES } from '../../filters/inbound-rules.js';
import { findUrls } from '../../filters/links.js';
import { splitMessage } from '../../filters/message-headers.js';
import { mimeLeaves } from '../../filters/mime-parts.js';
import { FITTED_SCORES } from '../../filters/rule-weights.js';
import { scoreRules } from '../../filters/spam-rules.js';

const CLASSIC = [...CLASSIC_HEADER_RULES, ...CLASSIC_TEXT_RULES];
const OWN = 'Received: from mx.sluice.test by mx.sluice.test with ESMTP; Mon, 2 Dec 2002 10:05:00 +0000';
const HANDED = 'Received: from relay.sender.test ([192.0.2.1]) by relay.example.test with ESMTP id 1; Mon, 2 Dec 2002 10:00:00 +0000';
const BASE: Record<string, string> = {
  From: 'Alice Example <alice@sender.test>',
  To: 'bob@corp.test',
  Subject: 'Minutes of the meeting',
  Date: 'Mon, 2 Dec 2002 09:59:00 +0000',
  'Message-ID': '<1234.abc@sender.test>',
  'MIME-Version': '1.0',
  'Content-Type': 'text/plain; charset=utf-8',
};
const ORDINARY = 'Hi Bob,\r\n\r\nthe minutes are on the wiki: https://wiki.sender.test/minutes. See you on Thursday.\r\n\r\nAlice';

/** A message: the base header fields with `head` replacing or adding some (null removes one), and a body. */
function msg(head: Record<string, string | null> = {}, body = ORDINARY): ContentContext {
  const fields = { ...BASE, ...head };
  const lines = [OWN, HANDED, ...Object.entries(fields).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${v}`)];
  const raw = Buffer.from([...lines, '', body].join('\r\n'));
  const { headers, bodyOffset } = splitMessage(raw);
  const leaves = mimeLeaves(raw);
  return { auth: undefined, headers, body: raw.subarray(bodyOffset), leaves, urls: findUrls(leaves) };
}
const html = (body: string, head: Record<string, string | null> = {}) => msg({ 'Content-Type': 'text/html; charset=utf-8', ...head }, body);
const hits = (c: ContentContext) => scoreRules(c, CLASSIC).rules.map((r) => r.name);

t.test('an ordinary message trips no classic rule', async (t) => {
  t.same(hits(msg()), []);
  t.same(hits(html('<p>Hi Bob, the <b>minutes</b> are on <a href="https://wiki.sender.test/">the wiki</a>. Alice</p>')), []);
});

t.test('header rules: each on a message with its trait, alone', async (t) => {
  const cases: [string, Record<string, string | null>][] = [
    ['DATE_IN_FUTURE', { Date: 'Wed, 4 Dec 2002 10:00:00 +0000' }],
    ['DATE_IN_PAST', { Date: 'Mon, 18 Nov 2002 10:00:00 +0000' }],
    ['DATE_MALFORMED', { Date: '2002-12-02 09:59' }],
    ['MSGID_MALFORMED', { 'Message-ID': 'no-brackets-here' }],
    ['FROM_DISPLAY_OTHER_ADDRESS', { From: '"support@bank.test" <x@other.test>' }],
    ['FROM_LOCAL_DIGITS', { From: 'Deals <deals1234567@sender.test>' }],
    ['REPLY_TO_OTHER_SITE', { 'Reply-To': 'orders@elsewhere.test' }],
    ['TO_UNDISCLOSED', { To: 'undisclosed-recipients:;' }],
    ['CC_EMPTY', { Cc: '' }],
    ['TO_IS_FROM', { To: 'alice@sender.test' }],
    ['BULK_MAILER', { 'X-Mailer': 'Advanced Mass Sender 4.2' }],
    ['PRIORITY_HIGH', { 'X-Priority': '1 (Highest)' }],
    ['MIME_WITHOUT_VERSION', { 'MIME-Version': null, 'Content-Type': 'multipart/mixed; boundary="b"' }],
    ['SUBJECT_MONEY', { Subject: 'Save 50% off today' }],
    ['SUBJECT_EXCLAIM', { Subject: 'Read this!' }],
    ['SUBJECT_TRAILING_ID', { Subject: 'Your account statement         38271' }],
  ];
  for (const [name, head] of cases) t.same(hits(msg(head)), [name], name);
});

t.test('replies to a free mailbox from another domain; not a list or group, nor within the sender\'s own', async (t) => {
  t.same(hits(msg({ 'Reply-To': 'letmego@bk.ru' })), ['REPLY_TO_OTHER_SITE', 'REPLY_TO_FREEMAIL'], 'a borrowed From, a free mailbox for replies');
  t.same(hits(msg({ 'Reply-To': '"Claims" <claims.office@yahoo.co.uk>' })), ['REPLY_TO_OTHER_SITE', 'REPLY_TO_FREEMAIL'], 'a country site of a provider');
  t.same(hits(msg({ From: 'Joy <joy88@hotmail.com>', 'Reply-To': 'joy88@hotmail.com' })), [], 'a free mailbox replying to itself');
  t.same(hits(msg({ From: 'Joy <joy88@hotmail.com>', 'Reply-To': 'OneIncomeLiving@groups.msn.com' })), ['REPLY_TO_OTHER_SITE'], 'an MSN group, as a mailing list');
  t.same(hits(msg({ 'Reply-To': 'list@yahoogroups.com' })), ['REPLY_TO_OTHER_SITE'], 'a Yahoo group');
});

t.test('the Received field of a forged trace: a date that is no RFC 5322 date-time', async (t) => {
  const raw = Buffer.from([OWN, 'Received: from unknown (156.54.224.23) by relay.test with local; Sep, 14 2002 18:03:45 -0300', ...Object.entries(BASE).map(([k, v]) => `${k}: ${v}`), '', ORDINARY].join('\r\n'));
  const { headers, bodyOffset } = splitMessage(raw);
  const leaves = mimeLeaves(raw);
  // The hand-over date is unreadable, so the Date rules have nothing to compare with and stay silent.
  t.same(hits({ auth: undefined, headers, body: raw.subarray(bodyOffset), leaves, urls: findUrls(leaves) }), ['RECEIVED_DATE_MALFORMED']);
});

t.test('text rules: phrases in several languages, shouting, obfuscation', async (t) => {
  const cases: [string, string][] = [
    ['TEXT_MONEY_MAKING', 'Learn how to make money while you sleep.'],
    ['TEXT_MONEY_MAKING', 'Descubra cómo ganar dinero desde casa.'],
    ['TEXT_LOTTERY', 'Congratulations, you have won our draw.'],
    ['TEXT_LOTTERY', 'Sie haben gewonnen! Melden Sie sich.'],
    ['TEXT_PHARMA', 'Cheap viagra shipped overnight.'],
    ['TEXT_DEBT', 'Refinance your home in minutes.'],
    ['TEXT_ADVANCE_FEE', 'As next of kin you may claim the transfer of funds held for my late client.'],
    ['TEXT_URGENCY', 'This offer is for a limited time.'],
    ['TEXT_FREE_OFFER', 'Ask for your free trial.'],
    ['TEXT_GENERIC_GREETING', 'Dear friend, I write to you.'],
    ['TEXT_CLAIMS_NOT_SPAM', 'This is not spam: you opted in. Reply with "remove" in the subject.'],
    ['TEXT_SHOUTING', 'THIS IS THE MOST IMPORTANT MESSAGE YOU WILL READ THIS YEAR. '.repeat(5)],
    ['TEXT_EXCLAIMS', 'Wow! Great! Amazing! Incredible! Unbelievable!'],
    ['TEXT_DOLLAR_AMOUNTS', 'Pay $10, get $20, then $30, $40 and $50.'],
    ['TEXT_SPLIT_WORD', 'Order v.i.a.g.r.a today.'],
    ['TEXT_MIXED_SCRIPT', 'Log in to your Pаypal account.'],
    ['TEXT_INVISIBLE_IN_WORD', 'Buy chea\u200bp watches.'],
  ];
  for (const [name, body] of cases) t.ok(hits(msg({}, body)).includes(name), `${name}: ${body.slice(0, 40)}`);
  t.notOk(hits(msg({}, 'The text has a few Capitals, as English does.')).includes('TEXT_SHOUTING'));
  t.notOk(hits(msg({}, 'We met the beneficiary of the grant.')).includes('TEXT_ADVANCE_FEE'), 'one advance-fee phrase is not enough');
  t.notOk(hits(msg({}, 'Use e.g. the wiki.')).includes('TEXT_SPLIT_WORD'), 'an abbreviation is no split word');
});

t.test('HTML and link rules', async (t) => {
  const cases: [string, ContentContext][] = [
    ['HTML_COMMENT_IN_WORD', html('<p>Buy vi<!-- x -->agra now, and this sentence pads the text out well past any image-only measure of two hundred letters, which keeps the image rule out of this case entirely; more words, more words, more words, more words.</p>')],
    ['HTML_TINY_FONT', html('<p>Hello Bob, the minutes are on the wiki, see you on Thursday; more words to pad the text past two hundred letters so that the image rule stays out of it. More words, more words.<font size="1">fine print</font></p>')],
    ['HTML_IMAGE_ONLY', html('<img src="https://img.sender.test/offer.png">')],
    ['HTML_FORM', html('<p>Confirm your account, Bob; this paragraph pads the visible text out past two hundred letters so that the image-only rule keeps out of the test, more words, more words, more words.</p><form action="https://collect.test/post"><input name="pw"></form>')],
    ['HTML_SCRIPT', html('<p>Hello Bob; this paragraph pads the visible text out past two hundred letters so that the image-only rule keeps out of the test, more words, more words, more words, more words.</p><script>x()</script>')],
    ['URL_CLICK_HERE', html('<p>Hello Bob; this paragraph pads the visible text out past two hundred letters so that the image-only rule keeps out of the test, more words, more words, more words. <a href="https://sender.test/x">click here</a></p>')],
    ['URL_REDIRECT', msg({}, 'See https://sender.test/r?url=https://elsewhere.test/ for it.')],
    ['URL_ODD_PORT', msg({}, 'See http://sender.test:8081/page for it.')],
  ];
  for (const [name, c] of cases) t.same(hits(c), [name], name);
  const b64 = Buffer.from('Hello Bob, the minutes are on the wiki.').toString('base64');
  t.same(hits(msg({ 'Content-Transfer-Encoding': 'base64' }, b64)), ['HTML_BASE64_TEXT'], 'a base64 text part');
});

t.test('every classic rule is in the inbound table, described, scored from the fit where it was fitted', async (t) => {
  const names = new Set(INBOUND_RULES.map((r) => r.name));
  for (const r of CLASSIC) {
    t.ok(names.has(r.name), `${r.name} is an inbound rule`);
    t.ok(r.description.length > 10, `${r.name} is described`);
    t.ok(r.score >= 0 && r.score < 5, `${r.name}: a sign of spam that does not decide alone (${r.score})`);
    if (r.name in FITTED_SCORES) t.equal(r.score, FITTED_SCORES[r.name], `${r.name} has its fitted score`);
  }
  t.equal(new Set(CLASSIC.map((r) => r.name)).size, CLASSIC.length, 'names are unique');
});
