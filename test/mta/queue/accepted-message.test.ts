// Checks the accepted-message record's one mapping to the stored row: each kind fills only its own columns.
import t from 'tap';
import { messageRow } from '../../../mta/queue/accepted-message.js';
import { bufferSource } from '../../../storage/message-source.js';
import { TRACK_CLICK, TRACK_OPEN } from '../../../storage/ports/tracking.js';

const raw = Buffer.from('Subject: x\r\n\r\nbody\r\n');
const at = { createdAt: 1_000, expiresAt: 1_500 };
/** The body as the Bodies port returned it (opaque here). */
const body = { key: 'body-1', size: raw.length };

t.test('outbound: every sender column is the record\'s own; the account becomes accountId', async (t) => {
  const row = messageRow(
    {
      kind: 'outbound', account: { id: 7, handle: 'acme' }, sendRequestId: 'req-1', messageId: 'm1@acme.test', mailFrom: 'bounce@acme.test',
      fromEmail: 'app@acme.test', subject: 'Hi', campaignId: 'spring', transactional: false, verp: false, body: bufferSource(raw), auth: 'alice',
      upstream: '192.0.2.1', upstreamHostname: 'client.test', senderId: 'acme', recipients: ['b@rcpt.test'],
      dropped: new Map([['b@rcpt.test', { status: '5.7.1', reason: 'suppressed' }]]),
    },
    1_000,
    500,
    body,
  );
  t.strictSame(row, {
    kind: 'outbound', accountId: 7, sendRequestId: 'req-1', messageId: 'm1@acme.test', mailFrom: 'bounce@acme.test',
    fromEmail: 'app@acme.test', subject: 'Hi', campaignId: 'spring', transactional: false, body, size: raw.length, auth: 'alice',
    upstream: '192.0.2.1', upstreamHostname: 'client.test', senderId: 'acme', verdicts: null, tracking: 0, verp: false, ...at,
  });
  t.notOk('recipients' in row || 'dropped' in row || 'account' in row || 'raw' in row, 'envelope-only fields stay out of the row');
});

t.test('outbound with engagement: its flags become the tracking column, its tokens stay out of the row', async (t) => {
  const row = messageRow(
    {
      kind: 'outbound', account: { id: 7, handle: 'acme' }, sendRequestId: 'req-2', messageId: 'm2@acme.test', mailFrom: 'bounce@acme.test',
      fromEmail: 'app@acme.test', subject: 'Hi', campaignId: null, transactional: true, verp: false, body: bufferSource(raw), auth: null, upstream: null,
      upstreamHostname: null, senderId: null, recipients: ['b@rcpt.test'],
      engagement: { flags: TRACK_OPEN | TRACK_CLICK, tokens: { key: Buffer.alloc(16), links: ['https://shop.test/'], clickHost: 'c.test', openHost: 'o.test', custom: 0 } },
    },
    1_000,
    500,
    body,
  );
  t.equal(row.tracking, TRACK_OPEN | TRACK_CLICK);
  t.notOk('engagement' in row, 'the tokens are stored apart (tracked_messages)');
});

t.test('relay: no account, no sender columns, transactional, verdicts kept', async (t) => {
  const row = messageRow(
    { kind: 'relay', sendRequestId: 'Q1', messageId: 'm@sender.test', mailFrom: 'a@sender.test', body: bufferSource(raw), recipients: ['bob@corp.test'], verdicts: [] },
    1_000,
    500,
    body,
  );
  t.strictSame(row, {
    kind: 'relay', accountId: null, sendRequestId: 'Q1', messageId: 'm@sender.test', mailFrom: 'a@sender.test',
    fromEmail: null, subject: null, campaignId: null, transactional: true, body, size: raw.length, auth: null, upstream: null,
    upstreamHostname: null, senderId: null, verdicts: [], tracking: 0, verp: false, ...at,
  });
});

t.test('dsn: sent with the null reverse-path, from MAILER-DAEMON', async (t) => {
  const row = messageRow(
    {
      kind: 'dsn', sendRequestId: 'u-1', messageId: 'dsn@mx.sluice.test', fromEmail: 'MAILER-DAEMON@mx.sluice.test',
      subject: 'Undelivered Mail Returned to Sender', body: bufferSource(raw), recipients: ['a@sender.test'],
    },
    1_000,
    500,
    body,
  );
  t.strictSame(row, {
    kind: 'dsn', accountId: null, sendRequestId: 'u-1', messageId: 'dsn@mx.sluice.test', mailFrom: '',
    fromEmail: 'MAILER-DAEMON@mx.sluice.test', subject: 'Undelivered Mail Returned to Sender', campaignId: null,
    transactional: true, body, size: raw.length, auth: null, upstream: null, upstreamHostname: null, senderId: null, verdicts: null, tracking: 0, verp: false, ...at,
  });
});
