// Checks the built-in outbound rules on real MIME (nodemailer-composed): GTUBE and EICAR in encoded parts, URL and
// header heuristics, and the From domain's authentication state.
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { mimeLeaves } from '../../filters/mime-parts.js';
import { findUrls } from '../../filters/links.js';
import { EICAR, scanOutboundContent, type FromAuthState } from '../../filters/outbound-rules.js';
import { GTUBE } from '../../filters/spam-rules.js';

const SIGNED: FromAuthState = { dkimAligned: true, dmarcPolicy: 'unknown', spfAligned: 'unknown' };

async function compose(opts: Record<string, unknown>): Promise<Buffer> {
  return new MailComposer({
    from: 'App <app@sender.test>',
    to: 'bob@rcpt.test',
    subject: 'Hello',
    date: new Date('2026-11-22T12:00:00Z'),
    messageId: '<m1@sender.test>',
    text: 'Hi Bob',
    ...opts,
  })
    .compile()
    .build();
}

const names = (raw: Buffer, auth = SIGNED) => scanOutboundContent(raw, auth).spam.rules.map((r) => r.name);

t.test('a plain, signed message hits no rule', async (t) => {
  const found = scanOutboundContent(await compose({ html: '<p>Hi <a href="https://sender.test/x">sender.test</a></p>' }), SIGNED);
  t.same(found, { spam: { score: 0, rules: [] }, eicar: false, bulk: false });
});

t.test('GTUBE and EICAR are found in base64 and quoted-printable parts', async (t) => {
  const gtubeB64 = await compose({ text: undefined, attachments: [{ filename: 'g.txt', content: GTUBE, encoding: 'utf8', contentTransferEncoding: 'base64' }] });
  t.notOk(gtubeB64.includes(GTUBE), 'GTUBE is not in the raw bytes');
  t.same(names(gtubeB64), ['GTUBE']);
  const eicar = await compose({ attachments: [{ filename: 'eicar.com', content: Buffer.from(EICAR) }] });
  t.notOk(eicar.includes(EICAR), 'EICAR is base64-encoded in the message');
  t.equal(scanOutboundContent(eicar, SIGNED).eicar, true);
  const qp = await compose({ text: `${'long line '.repeat(10)}${GTUBE}`, textEncoding: 'quoted-printable' });
  t.same(names(qp), ['GTUBE']);
  t.equal(scanOutboundContent(qp, SIGNED).spam.score, 1000);
});

t.test('URL heuristics', async (t) => {
  const raw = await compose({
    html: [
      '<a href="http://192.0.2.7/login">click</a>',
      '<a href="https://bank.example@evil.test/">bank</a>',
      '<a href="https://evil.test/pay">https://www.bank.example/pay</a>',
      '<a href="https://bit.ly/abc">more</a>',
    ].join('\n'),
  });
  t.same(names(raw), ['URL_IP_HOST', 'URL_USERINFO', 'URL_TEXT_MISMATCH', 'URL_SHORTENER']);
  t.equal(scanOutboundContent(raw, SIGNED).spam.score, 7.5);
  const links = findUrls(mimeLeaves(raw));
  t.same(links.map((l) => l.url.hostname), ['192.0.2.7', 'evil.test', 'evil.test', 'bit.ly']);
  t.same(names(await compose({ html: '<a href="https://www.sender.test/a">sender.test</a>' })), [], 'a subdomain of the shown host is no mismatch');
  t.same(names(await compose({ text: 'see http://198.51.100.1/x now' })), ['URL_IP_HOST'], 'links in plain text too');
});

t.test('header heuristics', async (t) => {
  t.same(names(await compose({ subject: 'FREE MONEY FOR EVERYONE' })), ['SUBJECT_ALL_CAPS']);
  t.same(names(await compose({ subject: 'Win $$$ now!' })), ['SUBJECT_EXCESS_PUNCT']);
  t.same(names(await compose({ from: '"service@paypal.example" <x@sender.test>' })), ['FROM_NAME_HAS_ADDRESS']);
  t.same(names(await compose({ from: '"app@sender.test" <app@sender.test>' })), [], 'its own address in the name is fine');
  const missing = Buffer.from('To: b@rcpt.test\r\n\r\nhi\r\n');
  t.same(names(missing), ['MISSING_FROM', 'MISSING_DATE', 'MISSING_MESSAGE_ID', 'MISSING_SUBJECT']);
  t.equal(scanOutboundContent(await compose({ headers: { 'List-Unsubscribe': '<https://sender.test/u>' } }), SIGNED).bulk, true);
  t.equal(scanOutboundContent(await compose({ headers: { Precedence: 'bulk' } }), SIGNED).bulk, true);
});

t.test('the From domain authentication state', async (t) => {
  const raw = await compose({});
  t.same(names(raw, { dkimAligned: false, dmarcPolicy: null, spfAligned: 'unknown' }), ['FROM_DKIM_UNALIGNED']);
  t.same(names(raw, { dkimAligned: false, dmarcPolicy: 'reject', spfAligned: 'pass' }), ['FROM_DKIM_UNALIGNED', 'FROM_DMARC_ENFORCED_UNSIGNED']);
  const fails = scanOutboundContent(raw, { dkimAligned: false, dmarcPolicy: 'quarantine', spfAligned: 'fail' }).spam;
  t.same(fails.rules.map((r) => r.name), ['FROM_DKIM_UNALIGNED', 'FROM_DMARC_ENFORCED_UNSIGNED', 'FROM_DMARC_WILL_FAIL']);
  t.equal(fails.score, 10, 'SUSPECT (≥ 5), not CONFIRMED (< 15)');
  t.same(names(raw, { dkimAligned: false, dmarcPolicy: 'reject', spfAligned: 'unknown' }), ['FROM_DKIM_UNALIGNED', 'FROM_DMARC_ENFORCED_UNSIGNED'], 'unknown SPF never counts as a failure');
});

t.test('mimeLeaves is bounded and walks attached messages', async (t) => {
  const inner = await compose({ text: GTUBE });
  const outer = await compose({ attachments: [{ filename: 'fwd.eml', content: inner, contentType: 'message/rfc822' }] });
  t.same(names(outer), ['GTUBE'], 'GTUBE inside an attached message');
  const leaves = mimeLeaves(outer, { maxParts: 2, maxDepth: 20 });
  t.equal(leaves.length, 1, 'stops after maxParts parts');
});
