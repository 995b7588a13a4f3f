// Checks the MX's RCPT stage: the relay decision reads the served domain once and hands that row to the RCPT-time
// checks (lists, DNS lists, greylisting), which do not read it again; a domain not served never reaches them.
import net from 'node:net';
import { generate } from 'selfsigned';
import t from 'tap';
import { mxOptions } from '../../../mta/smtp/mx-listener.js';
import { startSmtpListener } from '../../../mta/smtp/listener.js';

const pems = await generate([{ name: 'commonName', value: 'mx.sluice.test' }], { keySize: 2048, algorithm: 'sha256' });
const tls = { cert: pems.cert, key: pems.private, source: 'config' as const };

t.test('one served-domain read per RCPT, its row handed to checkRecipient; a foreign domain is refused first', async (t) => {
  const lookups: string[] = [];
  const checked: unknown[] = [];
  const row = { id: 7, domain: 'corp.test', account_id: 3 };
  const l = await startSmtpListener(
    'mx',
    { host: '127.0.0.1', port: 0 },
    mxOptions({
      hostname: 'mx.sluice.test',
      tls,
      maxMessageBytes: 1 << 20,
      findServedDomain: async (name) => {
        lookups.push(name);
        return name === 'corp.test' ? row : undefined;
      },
      checkRecipient: async (q) => {
        checked.push(q.served);
        return undefined;
      },
    }),
  );
  t.teardown(() => l.close());

  const socket = net.connect(l.address().port, '127.0.0.1');
  socket.setEncoding('latin1');
  t.teardown(() => socket.destroy());
  const lines: string[] = [];
  let waiting: (() => void) | undefined;
  socket.on('data', (d: string) => {
    for (const line of d.split('\r\n')) if (/^\d{3} /.test(line)) lines.push(line);
    waiting?.();
  });
  /** The next final reply line (after `n` replies so far). */
  const reply = async (n: number) => {
    while (lines.length <= n) await new Promise<void>((r) => (waiting = r));
    return lines[n]!;
  };
  t.match(await reply(0), /^220 /);
  const send = async (cmd: string) => {
    const n = lines.length;
    socket.write(`${cmd}\r\n`);
    return reply(n);
  };
  t.match(await send('EHLO client.test'), /^250 /);
  t.match(await send('MAIL FROM:<a@sender.test>'), /^250 /);
  t.match(await send('RCPT TO:<bob@corp.test>'), /^250 /);
  t.match(await send('RCPT TO:<eve@elsewhere.test>'), /^550 5\.7\.1 /);
  t.same(lookups, ['corp.test', 'elsewhere.test'], 'one look-up per RCPT');
  t.same(checked, [row], 'the RCPT checks got the row the relay decision read, and ran for the served domain only');
});
