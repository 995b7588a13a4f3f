// Unit tests of the originator fields' strict parsing (RFC 5322 §3.4, §3.6.2, §3.6.6) that Domain Lockdown reads.
import t from 'tap';
import { originatorField, parseOriginator, readOriginators } from '../../../mta/outbound/originators.js';

t.test('From and Resent-From are mailbox lists; the domains come back as lower-case A-labels', async (t) => {
  t.same(parseOriginator('from', 'App <app@Sender.TEST>'), [{ address: 'app@sender.test', domain: 'sender.test' }]);
  t.same(parseOriginator('from', 'a@sender.test, "Ceo, Other" <ceo@other.test>'), [
    { address: 'a@sender.test', domain: 'sender.test' },
    { address: 'ceo@other.test', domain: 'other.test' },
  ]);
  t.same(parseOriginator('resent-from', 'John Q. Public <jqp@sender.test>'), [{ address: 'jqp@sender.test', domain: 'sender.test' }], 'obs-phrase (RFC 5322 §4.1)');
  t.same(parseOriginator('from', 'app@sender.test (the app)'), [{ address: 'app@sender.test', domain: 'sender.test' }], 'a comment');
  t.same(parseOriginator('from', 'Jörg <j@bücher.de>'), [{ address: 'j@xn--bcher-kva.de', domain: 'xn--bcher-kva.de' }], 'RFC 6532 UTF-8, IDN');
  t.same(parseOriginator('from', '=?UTF-8?Q?J=C3=B6rg?=\r\n <j@sender.test>'), [{ address: 'j@sender.test', domain: 'sender.test' }], 'folded, encoded-word');
  t.same(parseOriginator('from', '<"a b"@sender.test>'), [{ address: '"a b"@sender.test', domain: 'sender.test' }], 'a quoted local part stays quoted');
});

t.test('what RFC 5322 does not allow is refused, so no reader sees a domain other than the one checked', async (t) => {
  for (const value of [
    'a@b.test@alpha.test',
    'a@b.test <x@alpha.test>',
    '<a@b.test>@alpha.test',
    'undisclosed-recipients:;',
    'a@sender.test,',
    '',
    'no address',
    'x@[127.0.0.1]',
    'x@localhost',
  ]) {
    t.equal(parseOriginator('from', value), undefined, JSON.stringify(value));
  }
  t.equal(parseOriginator('sender', 'a@sender.test, b@sender.test'), undefined, 'Sender is one mailbox');
  t.equal(parseOriginator('resent-sender', 'a@sender.test, b@sender.test'), undefined, 'Resent-Sender is one mailbox');
  t.same(parseOriginator('sender', 'Ops <ops@sender.test>'), [{ address: 'ops@sender.test', domain: 'sender.test' }]);
});

t.test('readOriginators reads every originator field in order and names the first that does not parse', async (t) => {
  t.equal(originatorField('RESENT-from'), 'resent-from');
  t.equal(originatorField('Reply-To'), undefined);
  t.equal(originatorField('constructor'), undefined, 'not a key of a plain object');
  const fields = [
    { name: 'From', value: 'a@sender.test' },
    { name: 'Subject', value: 'a@b.test@alpha.test is not an address field' },
    { name: 'Sender', value: 'ops@other.test' },
    { name: 'Resent-From', value: 'x@third.test' },
  ];
  t.same(readOriginators(fields), {
    ok: true,
    mailboxes: [
      { field: 'from', mailbox: { address: 'a@sender.test', domain: 'sender.test' } },
      { field: 'sender', mailbox: { address: 'ops@other.test', domain: 'other.test' } },
      { field: 'resent-from', mailbox: { address: 'x@third.test', domain: 'third.test' } },
    ],
  });
  t.same(readOriginators([...fields, { name: 'resent-sender', value: 'a@b.test@alpha.test' }]), { ok: false, field: 'resent-sender' });
});
