// Checks each inbound content rule (filters/content-rules.ts) on a message that has the trait and on one that does
// not, and that the table and the outbound table share the link rules rather than copy them.
import t from 'tap';
import { CLASSIC_HEADER_RULES } from '../../filters/classic-headers.js';
import { CLASSIC_TEXT_RULES } from '../../filters/classic-text.js';
import { CONTENT_RULES, type ContentContext } from '../../filters/content-rules.js';
import { INBOUND_RULES } from '../../filters/inbound-rules.js';
import { findUrls } from '../../filters/links.js';
import { splitMessage } from '../../filters/message-headers.js';
import { mimeLeaves } from '../../filters/mime-parts.js';
import { OUTBOUND_RULES } from '../../filters/outbound-rules.js';
import { FITTED_SCORES } from '../../filters/rule-weights.js';
import { scoreRules, SPAM_RULES } from '../../filters/spam-rules.js';

function ctx(head: string[], body: string): ContentContext {
  const raw = Buffer.from([...head, '', body].join('\r\n'));
  const { headers, bodyOffset } = splitMessage(raw);
  const leaves = mimeLeaves(raw);
  return { auth: undefined, headers, body: raw.subarray(bodyOffset), leaves, urls: findUrls(leaves) };
}
const hits = (c: ContentContext) => scoreRules(c, CONTENT_RULES).rules.map((r) => r.name);
const text = (body: string, head: string[] = []) => ctx(['From: a@sender.test', 'Subject: hello', 'Content-Type: text/plain; charset=utf-8', ...head], body);
const htmlOnly = (body: string) => ctx(['From: a@sender.test', 'Subject: hello', 'Content-Type: text/html; charset=utf-8'], body);
function withAttachment(name: string): ContentContext {
  return ctx(['From: a@sender.test', 'Subject: invoice', 'Content-Type: multipart/mixed; boundary="b"'], [
    '--b', 'Content-Type: text/plain; charset=utf-8', '', 'see attached', '--b',
    `Content-Type: application/octet-stream; name="${name}"`, `Content-Disposition: attachment; filename="${name}"`, 'Content-Transfer-Encoding: base64', '', 'AAAA', '--b--', '',
  ].join('\r\n'));
}

t.test('a plain message with an ordinary link trips nothing', async (t) => {
  t.same(hits(text('See https://www.example.com/page for details.')), []);
});

t.test('links: IP literal, user info, text naming another host, shortener', async (t) => {
  t.same(hits(text('go to http://192.0.2.7/login now')), ['URL_IP_HOST']);
  t.same(hits(text('go to http://bank.example@evil.example/ now')), ['URL_USERINFO']);
  t.same(hits(ctx(['From: a@x.test', 'Subject: s', 'Content-Type: multipart/alternative; boundary="b"'], [
    '--b', 'Content-Type: text/plain', '', 'your bank', '--b', 'Content-Type: text/html', '',
    '<a href="http://evil.example/">https://www.mybank.example/</a>', '--b--', ''].join('\r\n'))), ['URL_TEXT_MISMATCH']);
  t.same(hits(text('short: https://bit.ly/3abc')), ['URL_SHORTENER']);
});

t.test('link text: only text that is itself a link to another host is a mismatch', async (t) => {
  const mismatch = (anchor: string) => hits(htmlOnly(anchor)).includes('URL_TEXT_MISMATCH');
  t.equal(mismatch('<a href="http://evil.example/">mybank.example</a>'), true, 'a bare host');
  t.equal(mismatch('<a href="http://evil.example/">\n  https://www.mybank.example/login \n</a>'), true, 'a URL, spaced around');
  t.equal(mismatch('<a href="http://click.tracker.example/q=1">Top CIOs on the future of IT at News.example.</a>'), false, 'a headline naming a site');
  t.equal(mismatch('<a href="http://192.0.2.7/remove.php">http://192.0.2.7/remove.php</a>'), false, 'a shown IP URL is compared by its host, not its path');
  t.equal(mismatch('<a href="http://192.0.2.7/remove.php">http://192.0.2.8/remove.php</a>'), true, 'another IP');
  t.equal(mismatch('<a href="https://www.mybank.example/">mybank.example</a>'), false, 'a subdomain of the shown host');
});

t.test('HTML: only HTML, and text hidden from the reader', async (t) => {
  t.same(hits(htmlOnly('<p>Hello</p>')), ['HTML_ONLY']);
  t.same(hits(htmlOnly('<p>Hello</p><div style="display:none">cheap pills</div>')), ['HTML_ONLY', 'HTML_HIDDEN_TEXT']);
  t.same(hits(htmlOnly('<p>Hi</p><span style="color:#fff; font-size:0px;">filler words</span>')), ['HTML_ONLY', 'HTML_HIDDEN_TEXT']);
  t.same(hits(htmlOnly('<p style="font-size:10px">Hello</p><div style="display:none"></div>')), ['HTML_ONLY'], 'an empty hidden element hides nothing');
});

t.test('attachments: executable types and double extensions', async (t) => {
  t.same(hits(withAttachment('setup.exe')), ['ATTACH_EXECUTABLE']);
  t.same(hits(withAttachment('invoice.pdf.exe')), ['ATTACH_EXECUTABLE', 'ATTACH_DOUBLE_EXTENSION']);
  t.same(hits(withAttachment('receipt.pdf.html')), ['ATTACH_DOUBLE_EXTENSION']);
  t.same(hits(withAttachment('report.pdf')), []);
  t.same(hits(withAttachment('photos.tar.gz')), [], 'a compound archive name is not a lure');
});

t.test('subjects: encoded though plain, charset unlike the text, all capitals', async (t) => {
  t.same(hits(ctx(['From: a@x.test', 'Subject: =?utf-8?B?SGVsbG8gdGhlcmU=?=', 'Content-Type: text/plain; charset=utf-8'], 'hi')), ['SUBJECT_ENCODED_PLAIN']);
  t.same(hits(ctx(['From: a@x.test', 'Subject: =?utf-8?B?R3LDvMOfZQ==?=', 'Content-Type: text/plain; charset=utf-8'], 'hi')), [], 'encoded because it needs it');
  t.same(hits(ctx(['From: a@x.test', 'Subject: =?koi8-r?B?8NLJ18XU?=', 'Content-Type: text/plain; charset=utf-8'], 'hi')), ['SUBJECT_CHARSET_MISMATCH']);
  t.same(hits(ctx(['From: a@x.test', 'Subject: =?iso-8859-1?Q?Caf=E9?=', 'Content-Type: text/plain; charset=windows-1252'], 'hi')), [], 'latin charsets are one family');
  t.same(hits(ctx(['From: a@x.test', 'Subject: FREE MONEY WAITING', 'Content-Type: text/plain'], 'hi')), ['SUBJECT_ALL_CAPS']);
});

t.test('one table: inbound = header rules + content rules + classic rules; outbound shares the link rules', async (t) => {
  t.same(INBOUND_RULES.map((r) => r.name), [...SPAM_RULES, ...CONTENT_RULES, ...CLASSIC_HEADER_RULES, ...CLASSIC_TEXT_RULES].map((r) => r.name));
  for (const name of ['URL_IP_HOST', 'URL_USERINFO', 'URL_TEXT_MISMATCH', 'URL_SHORTENER', 'SUBJECT_ALL_CAPS']) {
    t.equal(OUTBOUND_RULES.find((r) => r.name === name), CONTENT_RULES.find((r) => r.name === name), `${name} is the same rule`);
  }
  for (const r of CONTENT_RULES) t.ok(r.score >= 0 && r.score < 5 && r.description.length > 10, `${r.name}: scored below the threshold, described`);
  // The fitter may find a rule says nothing on the corpus (0); the hand-scored ones each count for something.
  for (const r of CONTENT_RULES) if (!(r.name in FITTED_SCORES)) t.ok(r.score > 0, `${r.name}: a hand-set score above 0`);
  t.equal(CONTENT_RULES.find((r) => r.name === 'HTML_ONLY')?.score, FITTED_SCORES.HTML_ONLY ?? 0.5, 'HTML_ONLY is scored by the fit');
});
