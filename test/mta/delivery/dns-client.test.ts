// Tests the wire DNS client against real servers: TCP when truncated (RFC 7766), timeouts and failover with
// c-ares's codes, CNAME chains and their TTLs, system server strings, and mailauth verifying through the cache.
import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';
import MailComposer from 'nodemailer/lib/mail-composer';
import t, { type Test } from 'tap';
import { checkAuthentication } from '../../../filters/inbound-auth.js';
import { createDnsClient, parseSystemServer, readReply } from '../../../mta/delivery/dns-client.js';
import { createDnsResolver, mailauthResolver } from '../../../mta/delivery/dns-resolver.js';
import { dkimDnsRecord, generateDkimKeyPair } from '../../../mta/outbound/dkim-keys.js';
import { signMessage } from '../../../mta/outbound/dkim-sign.js';
import { startDnsServer } from '../../helpers/dns-server.js';

/** A UDP socket on 127.0.0.1 that reads queries and never answers (a dead server), closed at teardown. */
async function silentServer(t: Test) {
  const socket = dgram.createSocket('udp4');
  const heard: string[] = [];
  socket.on('message', (msg) => heard.push(dnsPacket.decode(msg).questions?.[0]?.name ?? '?'));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  t.teardown(() => socket.close());
  return { port: socket.address().port, heard };
}

t.test('a truncated UDP answer is asked again over TCP on the same server (RFC 7766)', async (t) => {
  const long = 'v=DKIM1; k=rsa; p=' + 'A'.repeat(1500);
  const dns = await startDnsServer(t, { 'big.test': { TXT: [long], TRUNCATE: true } });
  const r = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], tries: 1 });
  const txt = await r.txt('big.test');
  t.same(txt.ok && txt.records.map((x) => x.join('')), [long], 'the whole record, from the TCP answer');
  t.same(dns.tcpQueries, ['big.test TXT'], 'asked over TCP once');
  t.same(dns.queries, ['big.test TXT', 'big.test TXT'], 'UDP first, then TCP');
});

t.test('a dead server times out with ETIMEOUT after its tries; the next server answers', async (t) => {
  const dead = await silentServer(t);
  const client = createDnsClient({ servers: [{ host: '127.0.0.1', port: dead.port }], timeoutMs: 100, tries: 2 });
  t.same(await client.query('slow.test', 'A'), { ok: false, code: 'ETIMEOUT' });
  t.same(dead.heard, ['slow.test', 'slow.test'], 'asked once per try');

  const dns = await startDnsServer(t, { 'up.test': { A: ['192.0.2.7'], TTL: 30 } });
  const failover = createDnsClient({ servers: [{ host: '127.0.0.1', port: dead.port }, { host: '127.0.0.1', port: dns.port }], timeoutMs: 100, tries: 1 });
  t.same(await failover.query('up.test', 'A'), { ok: true, records: ['192.0.2.7'], ttl: 30 });
});

t.test('SERVFAIL moves on to the next server, as c-ares does; ESERVFAIL when every server fails', async (t) => {
  const broken = await startDnsServer(t, { 'x.test': { SERVFAIL: true } });
  const good = await startDnsServer(t, { 'x.test': { MX: [{ preference: 5, exchange: 'mx.x.test' }] } });
  const both = createDnsClient({ servers: [{ host: '127.0.0.1', port: broken.port }, { host: '127.0.0.1', port: good.port }], timeoutMs: 2000, tries: 1 });
  t.same(await both.query('x.test', 'MX'), { ok: true, records: [{ exchange: 'mx.x.test', priority: 5 }], ttl: 0 });
  const alone = createDnsClient({ servers: [{ host: '127.0.0.1', port: broken.port }], timeoutMs: 2000, tries: 1 });
  t.same(await alone.query('x.test', 'MX'), { ok: false, code: 'ESERVFAIL' });
  t.same(await alone.query('bad..name.test', 'MX'), { ok: false, code: 'EBADNAME' }, 'an empty label is refused before any query');
});

t.test('records at the end of a CNAME chain, kept for the smallest TTL on the way (RFC 1034 §3.6.2)', async (t) => {
  const reply = dnsPacket.decode(dnsPacket.encode({
    type: 'response',
    id: 1,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type: 'A', name: 'www.alias.test' }],
    answers: [
      { type: 'CNAME', name: 'www.alias.test', ttl: 30, data: 'edge.cdn.test' },
      { type: 'A', name: 'edge.cdn.test', ttl: 300, data: '192.0.2.20' },
      { type: 'A', name: 'elsewhere.test', ttl: 300, data: '192.0.2.99' },
    ],
  }));
  t.same(readReply(reply, 'WWW.alias.test', 'A'), { ok: true, records: ['192.0.2.20'], ttl: 30 }, 'a record of an unrelated name is ignored');
  t.same(readReply(reply, 'www.alias.test', 'CNAME'), { ok: true, records: ['edge.cdn.test'], ttl: 30 });
  t.same(readReply(reply, 'www.alias.test', 'AAAA'), { ok: false, code: 'ENODATA' }, 'no SOA: no negative TTL');
});

t.test('system server strings as dns.getServers() writes them', async (t) => {
  t.same(parseSystemServer('192.0.2.53'), { host: '192.0.2.53', port: 53 });
  t.same(parseSystemServer('192.0.2.53:5353'), { host: '192.0.2.53', port: 5353 });
  t.same(parseSystemServer('2001:db8::53'), { host: '2001:db8::53', port: 53 });
  t.same(parseSystemServer('[2001:db8::53]:5353'), { host: '2001:db8::53', port: 5353 });
});

t.test('mailauth verifies SPF, DKIM and DMARC through the cache; the second message asks nothing', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  const key = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);
  const dns = await startDnsServer(t, {
    // The TLD's SOA: mailauth's walk to the organizational domain asks _dmarc.test, NXDOMAIN, kept per this SOA.
    test: { SOA: { ttl: 300, minimum: 60 } },
    'sender.test': { TXT: ['v=spf1 include:_spf.sender.test -all'], TTL: 300 },
    '_spf.sender.test': { TXT: ['v=spf1 ip4:192.0.2.10 -all'], TTL: 300 },
    [key.name]: { TXT: [key.value], TTL: 300 },
    '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'], TTL: 300 },
  });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], cacheMaxEntries: 100, now: () => 0 });
  const raw = await signMessage(
    await new MailComposer({ from: 'a@sender.test', to: 'bob@corp.test', subject: 'Hi', text: 'hi\n', messageId: '<m@sender.test>' }).compile().build(),
    { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem },
  );
  const check = () => checkAuthentication(
    { raw, clientIp: '192.0.2.10', helo: 'mail.sender.test', mailFrom: 'a@sender.test' },
    { resolver: mailauthResolver(resolver), authservId: 'mx.sluice.test' },
  );
  const first = await check();
  t.same([first.results.spf.result, first.results.dkim[0]?.result, first.results.dmarc.result], ['pass', 'pass', 'pass']);
  t.ok(dns.queries.includes(`${key.name} TXT`), 'the DKIM key came from the server');
  const asked = dns.queries.length;
  const second = await check();
  t.same([second.results.spf.result, second.results.dkim[0]?.result, second.results.dmarc.result], ['pass', 'pass', 'pass']);
  t.same(dns.queries.slice(asked), [], 'every look-up of the second message came from the cache');
});
