// Tests smtp.proxy_protocol_from on a real listener: a v2 (HAProxy send-proxy-v2) or v1 header from a listed balancer
// names the session's client; LOCAL keeps the balancer's own; a listed peer without a header and anyone else's
// header are refused.
import net from 'node:net';
import type { Test } from 'tap';
import t from 'tap';
import { startSmtpListener } from '../../../mta/smtp/listener.js';
import { PROXY_V2_SIGNATURE } from '../../../mta/smtp/proxy-v2.js';

/** A listener that records each session's client, trusting PROXY headers from `proxyFrom`. */
async function listener(t: Test, proxyFrom: string[]) {
  const clients: { address: string; port: number }[] = [];
  const l = await startSmtpListener(
    'mx',
    { host: '127.0.0.1', port: 0 },
    {
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      onConnect(session, cb) {
        clients.push({ address: session.remoteAddress, port: session.remotePort });
        cb();
      },
    },
    { proxyFrom },
  );
  t.teardown(() => l.close());
  return { port: l.address().port, clients };
}

/** Connects, writes `head`, then reads until the server has said `lines` lines or closed; resolves with what it said. */
function talk(port: number, head: Buffer, then: string[] = []): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    let text = '';
    let sent = 0;
    s.on('error', () => {});
    s.on('connect', () => head.length > 0 && s.write(head));
    s.on('data', (d) => {
      text += d.toString('latin1');
      // Each reply ends a line; send the next command after each complete reply.
      if (/\r\n$/.test(text) && !/^\d{3}-/m.test(text.split('\r\n').at(-2) ?? '')) {
        if (sent < then.length) s.write(`${then[sent++]}\r\n`);
        else s.end();
      }
    });
    s.on('close', () => resolve(text));
  });
}

function v2(command: 0 | 1, family: 'tcp4' | 'tcp6' | 'unspec', src = '', dst = '', sport = 0, dport = 25): Buffer {
  let addr = Buffer.alloc(0);
  if (family === 'tcp4') {
    addr = Buffer.alloc(12);
    Buffer.from(src.split('.').map(Number)).copy(addr, 0);
    Buffer.from(dst.split('.').map(Number)).copy(addr, 4);
    addr.writeUInt16BE(sport, 8);
    addr.writeUInt16BE(dport, 10);
  } else if (family === 'tcp6') {
    addr = Buffer.alloc(36);
    const words = (ip: string) => new net.SocketAddress({ address: ip, family: 'ipv6' }).address;
    const expand = (ip: string) => {
      const [a = '', b = ''] = words(ip).split('::');
      const left = a ? a.split(':') : [];
      const right = b ? b.split(':') : [];
      return [...left, ...Array(8 - left.length - right.length).fill('0'), ...right].map((w) => parseInt(w, 16));
    };
    expand(src).forEach((w, i) => addr.writeUInt16BE(w, i * 2));
    expand(dst).forEach((w, i) => addr.writeUInt16BE(w, 16 + i * 2));
    addr.writeUInt16BE(sport, 32);
    addr.writeUInt16BE(dport, 34);
  }
  const fam = { tcp4: 0x11, tcp6: 0x21, unspec: 0x00 }[family];
  const fixed = Buffer.concat([PROXY_V2_SIGNATURE, Buffer.from([0x20 | command, fam, 0, 0])]);
  fixed.writeUInt16BE(addr.length, 14);
  return Buffer.concat([fixed, addr]);
}

t.test('a v2 header from a listed balancer names the client, IPv4 and IPv6, and the session goes on', async (t) => {
  const l = await listener(t, ['127.0.0.1']);
  const said = await talk(l.port, v2(1, 'tcp4', '203.0.113.9', '192.0.2.1', 40001), ['EHLO client.test', 'QUIT']);
  t.match(said, /^220 /, 'greeted after the header');
  t.match(said, /250-/, 'the session goes on');
  t.same(l.clients.at(-1), { address: '203.0.113.9', port: 40001 });
  await talk(l.port, v2(1, 'tcp6', '2001:db8::9', '2001:db8::1', 40002), ['QUIT']);
  t.same(l.clients.at(-1), { address: '2001:db8::9', port: 40002 });
});

t.test('v1 (send-proxy) still works; LOCAL (a health check) keeps the balancer as the client', async (t) => {
  const l = await listener(t, ['127.0.0.1']);
  await talk(l.port, Buffer.from('PROXY TCP4 198.51.100.4 192.0.2.1 40003 25\r\n'), ['QUIT']);
  t.equal(l.clients.at(-1)?.address, '198.51.100.4');
  await talk(l.port, v2(0, 'unspec'), ['QUIT']);
  t.equal(l.clients.at(-1)?.address, '127.0.0.1');
});

t.test('a listed balancer that sends no header, or a broken one, gets no session', async (t) => {
  const l = await listener(t, ['127.0.0.1']);
  const said = await talk(l.port, Buffer.from('EHLO sneaky.test\r\n'));
  t.notMatch(said, /^220 /, `no greeting: ${JSON.stringify(said)}`);
  const broken = Buffer.from(v2(1, 'tcp4', '203.0.113.9', '192.0.2.1', 1));
  broken[12] = 0x31; // version 3
  t.notMatch(await talk(l.port, broken), /^220 /, 'an unknown version is refused');
  t.equal(l.clients.length, 0, 'no session started');
});

t.test('a PROXY header from a peer that is not listed is not believed', async (t) => {
  const l = await listener(t, ['192.0.2.250']);
  const said = await talk(l.port, Buffer.alloc(0), ['PROXY TCP4 203.0.113.9 192.0.2.1 40001 25', 'QUIT']);
  t.match(said, /^220 /, 'a plain session');
  t.match(said, /\r\n5\d\d /, 'the PROXY line is refused as a command');
  t.equal(l.clients.at(-1)?.address, '127.0.0.1', 'the client is the real peer');
});
