// Checks the Received field both listeners prepend: its RFC 5321 §4.4 shape and RFC 5322 §2.1.1 line lengths.
import t from 'tap';
import { longestLine } from '../../../mta/smtp/header-lines.js';
import { receivedHeader } from '../../../mta/smtp/session.js';

const base = {
  hostname: 'mx.sluice.test',
  clientIp: '192.0.2.7',
  protocol: 'ESMTPS',
  id: 'abc.1',
  date: Date.UTC(2026, 10, 22, 12),
  tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384' },
};

t.test('the usual field is unchanged: one clause per line', async (t) => {
  t.equal(
    receivedHeader({ ...base, helo: 'client.example', rcpt: 'bob@corp.test' }),
    'Received: from client.example ([192.0.2.7])\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)\r\n' +
      '\tby mx.sluice.test (Sluice) with ESMTPS id abc.1\r\n\tfor <bob@corp.test>; Sun, 22 Nov 2026 12:00:00 +0000\r\n',
  );
});

t.test('an over-long HELO or recipient: lines within 78 octets where white space allows, never over 998', async (t) => {
  const helo = `${'h'.repeat(2000)}.example`;
  const rcpt = `${'r'.repeat(2000)}@corp.test`;
  const field = receivedHeader({ ...base, helo, rcpt });
  t.ok(longestLine(Buffer.from(field)) <= 78, `longest line ${longestLine(Buffer.from(field))} octets`);
  const unfolded = field.replace(/\r\n[ \t]+/g, ' ');
  t.match(unfolded, /^Received: from \[192\.0\.2\.7\] \(\[192\.0\.2\.7\] helo=h{64}\) /, 'a HELO longer than a domain name is shown cut, as a bad HELO is');
  t.notMatch(field, /for </, 'an address over 254 octets is left out of the for clause (RFC 5321 §4.5.3.1.3)');
  t.match(field, /\t; Sun, 22 Nov 2026 12:00:00 \+0000\r\n$/);
  const longName = receivedHeader({ ...base, hostname: `${'m'.repeat(200)}.example`, helo: 'client.example' });
  t.ok(longestLine(Buffer.from(longName)) <= 998, 'a long host name of ours folds at the spaces around it');
  t.match(longName.replace(/\r\n[ \t]+/g, ' '), /by m{200}\.example \(Sluice\) with ESMTPS id abc\.1/, 'and unfolds to the same field');
});
