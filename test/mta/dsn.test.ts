// Checks that DSNs are RFC 3464 multipart/report messages that parse, carry per-recipient status, and resist injection.
import { simpleParser } from 'mailparser';
import t from 'tap';
import { buildDsn, headerBlock } from '../../mta/dsn.js';

t.test('a DSN parses as multipart/report; report-type=delivery-status', async (t) => {
  const original = Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hi\r\n\r\nbody line\r\n');
  const { raw, messageId } = buildDsn({
    hostname: 'mx.sluice.test',
    to: 'a@sender.test',
    originalMessageId: 'orig@sender.test',
    arrivalDate: new Date(Date.UTC(2026, 10, 22)),
    now: new Date(Date.UTC(2026, 10, 22, 1)),
    recipients: [
      { rcpt: 'b@rcpt.test', status: '5.1.1', diagnostic: '550 5.1.1 no such user', remoteMta: 'mx.rcpt.test' },
      { rcpt: 'c@rcpt.test\r\nBcc: evil@x.test', status: 'junk', diagnostic: 'line1\r\nline2' },
    ],
    originalHeaders: headerBlock(original),
  });
  t.notMatch(raw.toString('latin1'), /(^|[^\r])\n/, 'CRLF only');
  const parsed = await simpleParser(raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
  t.equal(parsed.messageId, `<${messageId}>`);
  t.equal(parsed.headers.get('auto-submitted'), 'auto-replied');
  t.notOk(parsed.headers.has('bcc'), 'no injected header');
  const text = raw.toString('utf8');
  t.match(text, /Content-Type: message\/delivery-status\r\n\r\nReporting-MTA: dns; mx\.sluice\.test\r\n/);
  t.match(text, /Final-Recipient: rfc822; b@rcpt\.test\r\nAction: failed\r\nStatus: 5\.1\.1\r\nRemote-MTA: dns; mx\.rcpt\.test\r\nDiagnostic-Code: smtp; 550 5\.1\.1 no such user\r\n/);
  t.match(text, /Final-Recipient: rfc822; c@rcpt\.test Bcc: evil@x\.test\r\nAction: failed\r\nStatus: 5\.0\.0\r\n/);
  t.match(text, /Content-Type: text\/rfc822-headers\r\n\r\nFrom: a@sender\.test\r\nTo: b@rcpt\.test\r\nSubject: hi\r\n/);
  t.notMatch(text, /body line/, 'only the headers of the original');
});
