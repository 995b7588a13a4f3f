// Owns a small authoritative DNS server for tests: UDP on 127.0.0.1 port 0, answers from an editable zone map.
import dgram from 'node:dgram';
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
}

export type Zones = Record<string, ZoneEntry>;

export interface DnsServer {
  /** `127.0.0.1:<port>`, the form `dns.servers` takes. */
  address: string;
  port: number;
  /** The live zone map: tests may add or change names between look-ups. */
  zones: Zones;
  /** Queries received, as `NAME TYPE`. */
  queries: string[];
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
  const base = { name, ttl: 0, class: 'IN' as const };
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

/**
 * Starts the server with `zones` (owner names lower case, no trailing dot). Unknown names answer NXDOMAIN. TTLs are
 * 0 so that the resolver under test never serves a cached answer after a test edits the zone.
 */
export async function startDnsServer(t: Test, zones: Zones = {}): Promise<DnsServer> {
  const socket = dgram.createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, rinfo) => {
    let query: dnsPacket.DecodedPacket;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const q = query.questions?.[0];
    if (!q) return;
    const name = q.name.toLowerCase().replace(/\.$/, '');
    queries.push(`${name} ${q.type}`);
    const entry = zones[name];
    let rcode = 0;
    let answers: dnsPacket.Answer[] = [];
    if (!entry) rcode = NXDOMAIN;
    else if (entry.SERVFAIL) rcode = SERVFAIL;
    else answers = answersFor(q.name, q.type, entry);
    const reply = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | rcode,
      questions: [q],
      answers,
    });
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const port = socket.address().port;
  let closed = false;
  const close = () =>
    new Promise<void>((resolve) => {
      if (closed) return resolve();
      closed = true;
      socket.close(() => resolve());
    });
  t.teardown(close);
  return { address: `127.0.0.1:${port}`, port, zones, queries, close };
}
