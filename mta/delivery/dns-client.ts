// Owns asking DNS servers over the wire (UDP, TCP when truncated) and reading their answers with TTLs and the SOA
// of negative answers, which Node's c-ares resolver does not expose (it returns TTLs for A/AAAA only).
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import { getServers } from 'node:dns';
import net from 'node:net';
import dnsPacket from 'dns-packet';
import type { HostPort } from '../../config/keys.js';

/** The record types Sluice asks for: routing (MX, A, AAAA), mail authentication (TXT, PTR, CNAME), NS. */
export type QueryType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'CNAME' | 'PTR' | 'NS';

/** The node:dns record shape of each type (what `dns.promises.resolve(name, type)` returns per record). */
export interface RecordOf {
  A: string;
  AAAA: string;
  MX: { exchange: string; priority: number };
  TXT: string[];
  CNAME: string;
  PTR: string;
  NS: string;
}

/**
 * One look-up's outcome. `ttl` (seconds) is how long it may be believed: the smallest TTL of the records and the
 * CNAMEs leading to them; for NXDOMAIN/NODATA the SOA's (RFC 2308 §5), or absent when the answer carried no SOA
 * (RFC 2308 §5: such negative answers SHOULD NOT be cached). Failures carry node:dns's error codes.
 */
export type WireAnswer<T = unknown> = { ok: true; records: T[]; ttl: number } | { ok: false; code: string; ttl?: number };

export interface DnsClientOptions {
  /** Servers to ask in order; empty = the system's (`dns.getServers()`, as c-ares reads /etc/resolv.conf). */
  servers: readonly HostPort[];
  /** How long each server is given per try (ms); c-ares's `timeout`. */
  timeoutMs: number;
  /** Rounds over every server before giving up; c-ares's `tries`. */
  tries: number;
}

const RCODE_NOERROR = 0;
const RCODE_FORMERR = 1;
const RCODE_NXDOMAIN = 3;
/** node:dns's codes for the failure rcodes (c-ares's ARES_E*), which callers classify as temporary. */
const RCODE_ERRORS: Record<number, string> = { 1: 'EFORMERR', 2: 'ESERVFAIL', 4: 'ENOTIMP', 5: 'EREFUSED' };
/** RFC 6891 §6.2.5 and DNS Flag Day 2020: 1232 bytes fits any path's MTU without IP fragmentation. */
const EDNS_UDP_SIZE = 1232;
/** RFC 2181 §8: a TTL with the most significant bit set is treated as zero. */
const MAX_WIRE_TTL = 0x7fffffff;

/** An error shaped as node:dns throws it (`queryTxt ENOTFOUND example.com`, with code, syscall and hostname). */
export function dnsError(code: string, type: string, hostname: string): NodeJS.ErrnoException & { hostname: string } {
  const syscall = `query${type.charAt(0)}${type.slice(1).toLowerCase()}`;
  return Object.assign(new Error(`${syscall} ${code} ${hostname}`), { code, syscall, hostname });
}

/** `dns.getServers()` entries (`1.2.3.4`, `1.2.3.4:5353`, `::1`, `[::1]:5353`) as host and port. */
export function parseSystemServer(s: string): HostPort {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 53) };
  if (net.isIPv6(s)) return { host: s, port: 53 };
  const [host, port] = s.split(':');
  return { host: host!, port: Number(port ?? 53) };
}

/** RFC 1035 §2.3.4: labels of 1–63 octets, 255 octets in all (253 characters written without the root dot). */
function validName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  return name.split('.').every((l) => l.length > 0 && Buffer.byteLength(l) <= 63);
}

const ttlOf = (ttl: number | undefined) => (ttl === undefined || ttl > MAX_WIRE_TTL ? 0 : ttl);

function recordOf(type: QueryType, a: dnsPacket.Answer): unknown {
  const data = (a as { data: unknown }).data;
  switch (type) {
    case 'MX': {
      const mx = data as { exchange: string; preference: number };
      return { exchange: mx.exchange, priority: mx.preference };
    }
    // c-ares hands TXT character-strings over byte for byte (node makes one-byte strings of them): latin1 keeps that.
    case 'TXT':
      return (data as Buffer[]).map((b) => (Buffer.isBuffer(b) ? b.toString('latin1') : String(b)));
    default:
      return data;
  }
}

/** Reads a reply to `name`/`type`: the records of `type` at the name or at the end of its CNAME chain (RFC 1034 §3.6.2). */
export function readReply(reply: dnsPacket.DecodedPacket, name: string, type: QueryType): WireAnswer {
  const rcode = (reply.flags ?? 0) & 0xf;
  const answers = reply.answers ?? [];
  const chain = new Set([name.toLowerCase()]);
  let ttl = Infinity;
  if (type !== 'CNAME') {
    // Answers normally list the chain in order; a few passes also take one listed out of order (bounded: no loop).
    for (let pass = 0, grew = true; grew && pass < 8; pass++) {
      grew = false;
      for (const a of answers) {
        if (a.type !== 'CNAME' || !chain.has(a.name.toLowerCase()) || chain.has(String(a.data).toLowerCase())) continue;
        chain.add(String(a.data).toLowerCase());
        ttl = Math.min(ttl, ttlOf(a.ttl));
        grew = true;
      }
    }
  }
  const mine = answers.filter((a) => a.type === type && chain.has(a.name.toLowerCase()));
  if (rcode === RCODE_NOERROR && mine.length > 0) {
    for (const a of mine) ttl = Math.min(ttl, ttlOf((a as { ttl?: number }).ttl));
    return { ok: true, records: mine.map((a) => recordOf(type, a)), ttl };
  }
  if (rcode !== RCODE_NOERROR && rcode !== RCODE_NXDOMAIN) return { ok: false, code: RCODE_ERRORS[rcode] ?? 'EBADRESP' };
  // RFC 2308 §5: a negative answer is believed for min(SOA TTL, SOA MINIMUM); none without an SOA.
  const soa = (reply.authorities ?? []).find((a) => a.type === 'SOA') as dnsPacket.SoaAnswer | undefined;
  const negativeTtl = soa ? Math.min(ttlOf(soa.ttl), ttlOf(soa.data.minimum)) : undefined;
  return { ok: false, code: rcode === RCODE_NXDOMAIN ? 'ENOTFOUND' : 'ENODATA', ...(negativeTtl !== undefined ? { ttl: negativeTtl } : {}) };
}

type Exchange = { reply: dnsPacket.DecodedPacket } | { truncated: true };

/** Header fields read without decoding the rest: a truncated reply may not decode whole. */
function header(msg: Buffer): { id: number; flags: number } | undefined {
  return msg.length >= 12 ? { id: msg.readUInt16BE(0), flags: msg.readUInt16BE(2) } : undefined;
}

/** RFC 5452 §9.1: a reply counts only if its id and question match the query (anything else is ignored). */
function matches(p: dnsPacket.DecodedPacket, id: number, name: string, type: QueryType): boolean {
  const q = p.questions?.[0];
  return p.id === id && p.type === 'response' && q !== undefined && q.type === type && q.name.toLowerCase() === name.toLowerCase();
}

/**
 * A promise settled once, by the first of an answer, an error or `timeoutMs` passing (ETIMEOUT); `close` releases
 * the socket then, whichever came first.
 */
function settleOnce<T>(timeoutMs: number, close: () => void) {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  let finished = false;
  const finish = (err: Error | undefined, out?: T) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    close();
    if (err) reject(err);
    else resolve(out as T);
  };
  const timer = setTimeout(() => finish(Object.assign(new Error('timeout'), { code: 'ETIMEOUT' })), timeoutMs);
  return { promise, finish };
}

/** One try over UDP on a socket of its own (a fresh random source port per query, RFC 5452 §9.2). */
function overUdp(server: HostPort, query: Buffer, id: number, name: string, type: QueryType, timeoutMs: number): Promise<Exchange> {
  const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
  const { promise, finish } = settleOnce<Exchange>(timeoutMs, () => socket.close());
  // A connected socket hears the server's ICMP port-unreachable as ECONNREFUSED, as c-ares does.
  socket.on('error', (err) => finish(err));
  socket.on('message', (msg) => {
    const h = header(msg);
    if (!h || h.id !== id) return;
    // RFC 7766 §5 / RFC 1035 §4.2.1: TC set → ask again over TCP; the partial answer is not used.
    if (h.flags & dnsPacket.TRUNCATED_RESPONSE) return finish(undefined, { truncated: true });
    let p: dnsPacket.DecodedPacket;
    try {
      p = dnsPacket.decode(msg);
    } catch {
      return finish(Object.assign(new Error('bad response'), { code: 'EBADRESP' }));
    }
    if (matches(p, id, name, type)) finish(undefined, { reply: p });
  });
  socket.connect(server.port, server.host, () => socket.send(query));
  return promise;
}

/** One try over TCP: the query and the reply each behind a two-octet length (RFC 1035 §4.2.2, RFC 7766). */
function overTcp(server: HostPort, query: Buffer, id: number, name: string, type: QueryType, timeoutMs: number): Promise<Exchange> {
  const socket = net.connect({ host: server.host, port: server.port });
  const { promise, finish } = settleOnce<Exchange>(timeoutMs, () => socket.destroy());
  let buf = Buffer.alloc(0);
  socket.on('error', (err) => finish(err));
  socket.on('connect', () => {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(query.length);
    socket.write(Buffer.concat([len, query]));
  });
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return;
    let p: dnsPacket.DecodedPacket;
    try {
      p = dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0)));
    } catch {
      return finish(Object.assign(new Error('bad response'), { code: 'EBADRESP' }));
    }
    finish(matches(p, id, name, type) ? undefined : Object.assign(new Error('mismatched response'), { code: 'EBADRESP' }), { reply: p });
  });
  socket.on('end', () => finish(Object.assign(new Error('connection closed'), { code: 'ECONNREFUSED' })));
  return promise;
}

/** The query message: recursion desired, EDNS(0) with our UDP size unless the server refused it. */
function encodeQuery(id: number, name: string, type: QueryType, edns: boolean): Buffer {
  return dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
    ...(edns ? { additionals: [{ type: 'OPT', name: '.', udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] } : {}),
  });
}

/** A client that asks `servers` in turn, `tries` rounds, each server given `timeoutMs` per try. */
export function createDnsClient(opts: DnsClientOptions) {
  const configured = opts.servers.length > 0 ? opts.servers : getServers().map(parseSystemServer);
  // c-ares asks 127.0.0.1 when the system names no server; so do we.
  const servers = configured.length > 0 ? configured : [{ host: '127.0.0.1', port: 53 }];

  /** Asks for the `type` records of `name` (no trailing dot needed); never throws. */
  async function query(name: string, type: QueryType): Promise<WireAnswer> {
    const bare = name.replace(/\.$/, '');
    if (!validName(bare)) return { ok: false, code: 'EBADNAME' };
    // c-ares's semantics: SERVFAIL, REFUSED, NOTIMP and timeouts move on to the next server, then the next round.
    let last = 'ETIMEOUT';
    for (let round = 0; round < Math.max(1, opts.tries); round++) {
      for (const server of servers) {
        let edns = true;
        for (let attempt = 0; attempt < 2; attempt++) {
          const id = crypto.randomInt(0, 0x10000);
          const q = encodeQuery(id, bare, type, edns);
          try {
            let got = await overUdp(server, q, id, bare, type, opts.timeoutMs);
            if ('truncated' in got) got = await overTcp(server, q, id, bare, type, opts.timeoutMs);
            if (!('reply' in got)) continue;
            const rcode = (got.reply.flags ?? 0) & 0xf;
            // RFC 6891 §7: a server that answers FORMERR to EDNS is asked once more without it.
            if (rcode === RCODE_FORMERR && edns) {
              edns = false;
              continue;
            }
            const answer = readReply(got.reply, bare, type);
            if (answer.ok || answer.code === 'ENOTFOUND' || answer.code === 'ENODATA') return answer;
            last = answer.code;
          } catch (err) {
            last = (err as NodeJS.ErrnoException).code ?? 'EBADRESP';
          }
          break;
        }
      }
    }
    return { ok: false, code: last };
  }

  return { query };
}

export type DnsClient = ReturnType<typeof createDnsClient>;
