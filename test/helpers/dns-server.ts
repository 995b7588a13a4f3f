// Owns a small authoritative DNS server for tests: UDP and TCP on 127.0.0.1 (one port, chosen by the OS), answers
// from an editable zone map.
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import type { Test } from 'tap';

/** Records of one owner name. A name present in the zone with no record of the asked type answers NODATA. */
export interface ZoneEntry {
  MX?: { preference: number; exchange: string }[];
  A?: string[];
  AAAA?: string[];
  /** Each TXT record is one string or its character-strings. */
  TXT?: (string | string[])[];
  CNAME?: string;
  /** Every query for this name answers SERVFAIL (a broken authoritative server). */
  SERVFAIL?: boolean;
  /** TTL (seconds) of this name's records; 0 by default. */
  TTL?: number;
  /**
   * Makes this name a zone apex: NXDOMAIN and NODATA answers for it and the names under it carry its SOA in the
   * authority section (RFC 2308 §3), with this TTL and MINIMUM. Without one, negative answers carry no SOA.
   */
  SOA?: { ttl: number; minimum: number };
  /** Answers over UDP are truncated (TC set, no records); over TCP they are whole (RFC 7766). */
  TRUNCATE?: boolean;
}

export type Zones = Record<string, ZoneEntry>;

export interface DnsServer {
  /** `127.0.0.1:<port>`, the form `dns.servers` takes. */
  address: string;
  port: number;
  /** The live zone map: tests may add or change names between look-ups. */
  zones: Zones;
  /** Queries received over UDP and TCP, as `NAME TYPE`. */
  queries: string[];
  /** The queries that came over TCP, as `NAME TYPE`. */
  tcpQueries: string[];
  close: () => Promise<void>;
}

const SERVFAIL = 2;
const NXDOMAIN = 3;

/** Splits a TXT string into ≤255-byte character-strings (RFC 1035 §3.3.14). */
function txtStrings(value: string | string[]): Buffer[] {
  if (Array.isArray(value)) return value.map((s) => Buffer.from(s));
  const buf = Buffer.from(value);
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length || parts.length === 0; i += 255) parts.push(buf.subarray(i, i + 255));
  return parts;
}

function answersFor(name: string, type: string, entry: ZoneEntry): dnsPacket.Answer[] {
  const base = { name, ttl: entry.TTL ?? 0, class: 'IN' as const };
  if (entry.CNAME && type !== 'CNAME') return [{ ...base, type: 'CNAME', data: entry.CNAME }];
  switch (type) {
    case 'MX':
      return (entry.MX ?? []).map((mx) => ({ ...base, type: 'MX', data: mx }));
    case 'A':
      return (entry.A ?? []).map((a) => ({ ...base, type: 'A', data: a }));
    case 'AAAA':
      return (entry.AAAA ?? []).map((a) => ({ ...base, type: 'AAAA', data: a }));
    case 'TXT':
      return (entry.TXT ?? []).map((txt) => ({ ...base, type: 'TXT', data: txtStrings(txt) }));
    case 'CNAME':
      return entry.CNAME ? [{ ...base, type: 'CNAME', data: entry.CNAME }] : [];
    default:
      return [];
  }
}

/** The SOA of the nearest enclosing zone apex of `name` (RFC 2308 §3: a negative answer carries it), if any. */
function soaFor(name: string, zones: Zones): dnsPacket.Answer[] {
  const labels = name.split('.');
  for (let i = 0; i < labels.length; i++) {
    const apex = labels.slice(i).join('.');
    const soa = zones[apex]?.SOA;
    if (soa) {
      const data = { mname: `ns.${apex}`, rname: `hostmaster.${apex}`, serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: soa.minimum };
      return [{ name: apex, type: 'SOA', ttl: soa.ttl, class: 'IN', data }];
    }
  }
  return [];
}

/** The reply to `msg` (undefined: not a query worth answering), recording it in `queries`. */
function answer(msg: Buffer, zones: Zones, queries: string[], overTcp: boolean): Buffer | undefined {
  let query: dnsPacket.DecodedPacket;
  try {
    query = dnsPacket.decode(msg);
  } catch {
    return undefined;
  }
  const q = query.questions?.[0];
  if (!q) return undefined;
  const name = q.name.toLowerCase().replace(/\.$/, '');
  queries.push(`${name} ${q.type}`);
  const entry = zones[name];
  let rcode = 0;
  let answers: dnsPacket.Answer[] = [];
  if (!entry) rcode = NXDOMAIN;
  else if (entry.SERVFAIL) rcode = SERVFAIL;
  else if (entry.TRUNCATE && !overTcp) rcode = 0;
  else answers = answersFor(q.name, q.type, entry);
  const truncated = entry?.TRUNCATE === true && !overTcp && !entry.SERVFAIL;
  return dnsPacket.encode({
    type: 'response',
    id: query.id,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | rcode,
    questions: [q],
    answers,
    authorities: answers.length === 0 && !truncated && rcode !== SERVFAIL ? soaFor(name, zones) : [],
  });
}

/** Binds UDP on a port the OS picks and TCP on the same port (tried again with another when TCP finds it taken). */
async function bindBoth(): Promise<{ udp: dgram.Socket; tcp: net.Server; port: number }> {
  for (let attempt = 0; ; attempt++) {
    const udp = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    const port = udp.address().port;
    const tcp = net.createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, '127.0.0.1', () => resolve());
      });
      return { udp, tcp, port };
    } catch (err) {
      udp.close();
      if (attempt >= 10) throw err;
    }
  }
}

/**
 * Starts the server with `zones` (owner names lower case, no trailing dot). Unknown names answer NXDOMAIN. TTLs are
 * 0 unless an entry sets one, and negative answers carry no SOA unless a zone apex has one, so that a caching
 * resolver under test never serves a cached answer after a test edits the zone, unless the test asks for it.
 */
export async function startDnsServer(t: Test, zones: Zones = {}): Promise<DnsServer> {
  const queries: string[] = [];
  const tcpQueries: string[] = [];
  const { udp: socket, tcp, port } = await bindBoth();
  socket.on('message', (msg, rinfo) => {
    const reply = answer(msg, zones, queries, false);
    if (reply) socket.send(reply, rinfo.port, rinfo.address);
  });
  // RFC 1035 §4.2.2: over TCP each message is preceded by its two-octet length.
  tcp.on('connection', (conn) => {
    let buf = Buffer.alloc(0);
    conn.on('error', () => conn.destroy());
    conn.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        const before = queries.length;
        const reply = answer(msg, zones, queries, true);
        tcpQueries.push(...queries.slice(before));
        if (!reply) continue;
        const len = Buffer.alloc(2);
        len.writeUInt16BE(reply.length);
        conn.write(Buffer.concat([len, reply]));
      }
    });
  });
  let closed = false;
  const close = () =>
    new Promise<void>((resolve) => {
      if (closed) return resolve();
      closed = true;
      tcp.close();
      socket.close(() => resolve());
    });
  t.teardown(close);
  return { address: `127.0.0.1:${port}`, port, zones, queries, tcpQueries, close };
}
