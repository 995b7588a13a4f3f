// Tests of reading reports that come back (issue 35): RFC 3464 DSNs, RFC 5965 ARF, non-standard bounces, and the
// VERP return path token that names the delivery.
import t from 'tap';
import { readReport } from '../../../mta/delivery/report-parse.js';
import { parseReturnPath, returnPathOf, verifyReturnPath } from '../../../mta/delivery/return-path.js';
import { lateVerdict } from '../../../mta/queue/feedback.js';

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'));

t.test('a DSN: per-recipient blocks, folded fields, the block about our recipient', async (t) => {
  const raw = crlf([
    'From: MAILER-DAEMON@mx.rcpt.test', 'Subject: Undelivered Mail Returned to Sender', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status;', '\tboundary="b1"', '',
    '--b1', 'Content-Type: text/plain', '', 'I could not deliver it.', '',
    '--b1', 'Content-Type: message/delivery-status', '',
    'Reporting-MTA: dns; mx.rcpt.test', '',
    'Final-Recipient: rfc822; other@rcpt.test', 'Action: delivered', 'Status: 2.0.0', '',
    'Original-Recipient: rfc822;Bob@rcpt.test', 'Final-Recipient: rfc822; bob.smith@rcpt.test', 'Action: failed', 'Status: 5.2.1 (mailbox disabled)',
    'Remote-MTA: dns; store.rcpt.test', 'Diagnostic-Code: smtp; 550 5.2.1 The email account that you tried to reach is', ' disabled.', '',
    '--b1--', '',
  ]);
  const { report } = readReport(raw);
  t.equal(report.kind, 'dsn');
  if (report.kind !== 'dsn') return;
  t.equal(report.reportingMta, 'mx.rcpt.test');
  t.same(report.recipients.map((r) => [r.action, r.status]), [['delivered', '2.0.0'], ['failed', '5.2.1']]);
  t.same(lateVerdict(report, 'bob@rcpt.test'), {
    outcome: 'bounced', status: '5.2.1', diagnostic: '550 5.2.1 The email account that you tried to reach is disabled.', remoteMta: 'store.rcpt.test',
  }, 'Original-Recipient matches, case aside; the folded diagnostic is one line');
  t.equal(lateVerdict(report, 'other@rcpt.test'), undefined, 'a delivered block is no bounce');
  t.equal(lateVerdict(report, 'forwarded@rcpt.test')?.outcome, 'bounced', 'no block names it: the failed one counts (a forward)');
});

t.test('a DSN whose Status disagrees with its Action is read by the Action', async (t) => {
  const raw = crlf([
    'Content-Type: multipart/report; report-type=delivery-status; boundary=x', '', '--x', 'Content-Type: message/delivery-status', '',
    'Reporting-MTA: dns; mx.rcpt.test', '', 'Final-Recipient: rfc822; a@rcpt.test', 'Action: failed', 'Status: 4.4.7', '', '--x--',
  ]);
  t.match(lateVerdict(readReport(raw).report, 'a@rcpt.test'), { outcome: 'bounced', status: '5.0.0', diagnostic: '5.0.0 reported by mx.rcpt.test' });
});

t.test('an ARF report: its type and original recipient; the original\'s return path is in its texts', async (t) => {
  const raw = crlf([
    'From: fbl@isp.test', 'Content-Type: multipart/report; report-type=feedback-report; boundary="arf"', '',
    '--arf', 'Content-Type: text/plain', '', 'abuse report', '',
    '--arf', 'Content-Type: message/feedback-report', '', 'Feedback-Type: Abuse', 'User-Agent: ISP-FBL/2', 'Version: 1', 'Original-Rcpt-To: <c@isp.test>', '',
    '--arf', 'Content-Type: text/rfc822-headers', '', 'Return-Path: <b+1f.abcdefghijklmnop@bounces.test>', 'Subject: hi', '',
    '--arf--',
  ]);
  const { report, texts } = readReport(raw);
  t.same(report, { kind: 'arf', feedbackType: 'abuse', originalRcptTo: 'c@isp.test', userAgent: 'ISP-FBL/2' });
  t.ok(texts.some((x) => x.includes('b+1f.abcdefghijklmnop@bounces.test')));
});

t.test('non-standard bounces by their words; mail that is no bounce is none', async (t) => {
  const exim = crlf([
    'From: Mail Delivery System <Mailer-Daemon@mx.rcpt.test>', 'Subject: Mail delivery failed: returning message to sender', '',
    'This message was created automatically by mail delivery software.', '',
    'A message that you sent could not be delivered to one or more of its', 'recipients. This is a permanent error. The following address(es) failed:', '',
    '  bob@rcpt.test', '    SMTP error from remote mail server after RCPT TO:<bob@rcpt.test>:', '    550 5.1.1 <bob@rcpt.test>: User unknown', '',
  ]);
  t.match(readReport(exim).report, { kind: 'text-bounce', action: 'failed', status: '5.1.1', rule: 'mailbox-unknown', diagnostic: '550 5.1.1 <bob@rcpt.test>: User unknown' });
  const delayed = crlf(['From: postmaster@rcpt.test', 'Subject: Warning: message delayed', '', 'Your message has not yet been delivered. The system will continue to retry for 4 days.', '']);
  t.match(readReport(delayed).report, { kind: 'text-bounce', action: 'delayed', status: '4.4.7', rule: 'delayed' });
  const full = crlf(['From: MAILER-DAEMON@rcpt.test', 'Subject: Undeliverable', '', 'Delivery to bob failed: mailbox is full (552 5.2.2 quota).', '']);
  t.match(readReport(full).report, { kind: 'text-bounce', action: 'failed', status: '5.2.2', rule: 'mailbox-full' });
  const person = crlf(['From: Bob <bob@rcpt.test>', 'Subject: Re: your order', '', 'The parcel could not be delivered to my door, user unknown at the desk.', '']);
  t.same(readReport(person).report, { kind: 'none' }, 'a person\'s words are not read as a bounce');
  const silent = crlf(['From: MAILER-DAEMON@rcpt.test', 'Subject: Delivery report', '', 'Your message was delivered.', '']);
  t.same(readReport(silent).report, { kind: 'none' }, 'a mail system saying nothing of failure');
});

t.test('return path tokens: made and read back per delivery; any change of MAC, id or recipient fails', async (t) => {
  const secret = Buffer.alloc(32, 7);
  const d = { id: 123456, rcpt: 'Bob@Rcpt.test', message: { id: 99, account_id: 4 } };
  const address = returnPathOf(secret, 'bounces.test', d);
  t.match(address, /^b\+2n9c\.[a-z2-7]{16}@bounces\.test$/);
  const local = address.slice(0, address.indexOf('@'));
  const parsed = parseReturnPath(local.toUpperCase());
  t.same(parsed?.deliveryId, 123456, 'a receiver that folds case still names the delivery');
  t.ok(verifyReturnPath(secret, parsed!.mac, d));
  t.ok(verifyReturnPath(secret, parsed!.mac, { ...d, rcpt: 'bob@rcpt.test' }), 'the recipient compares ignoring case');
  t.notOk(verifyReturnPath(secret, parsed!.mac, { ...d, rcpt: 'eve@rcpt.test' }), 'another recipient');
  t.notOk(verifyReturnPath(secret, parsed!.mac, { ...d, message: { id: 99, account_id: 5 } }), 'another account');
  t.notOk(verifyReturnPath(Buffer.alloc(32, 8), parsed!.mac, d), 'another key');
  t.notOk(verifyReturnPath(secret, 'a'.repeat(16), d), 'another MAC');
  t.equal(parseReturnPath('b+0.abcdefghijklmnop'), undefined, 'id 0 names nothing');
  t.equal(parseReturnPath('bob'), undefined);
  t.equal(parseReturnPath(`${local}x`), undefined, 'a longer MAC is not one');
});
