// Owns a customer-side webhook receiver for tests (node http on 127.0.0.1:0) and an independent RFC 9421 verifier.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface ReceivedPost {
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  /** The parsed JSON array of events. */
  events: any[];
}

/**
 * What the receiver does with the next request: answer with a status, drop the connection without answering, or
 * hang (keep the connection open and never answer, until close()).
 */
export type ReceiverMode = { status: number; body?: string } | 'drop' | 'hang';

export interface Receiver {
  url: string;
  port: number;
  posts: ReceivedPost[];
  /** Decides each answer (default 200). */
  mode: (post: ReceivedPost) => ReceiverMode;
  /** Resolves once `n` POSTs have arrived (their bodies read), whatever the answer. */
  posted(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(t: Test, path = '/hooks/sluice'): Promise<Receiver> {
  const r: Receiver = {
    url: '',
    port: 0,
    posts: [],
    mode: () => ({ status: 200 }),
    posted: (n) => (r.posts.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    close: async () => undefined,
  };
  let waiters: { n: number; resolve: () => void }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let events: any[];
      try {
        events = JSON.parse(raw.toString('utf8'));
      } catch {
        events = [];
      }
      const post = { headers: req.headers, raw, events };
      r.posts.push(post);
      for (const w of waiters.filter((w) => r.posts.length >= w.n)) w.resolve();
      waiters = waiters.filter((w) => r.posts.length < w.n);
      const m = r.mode(post);
      if (m === 'drop') {
        req.socket.destroy();
        return;
      }
      if (m === 'hang') return;
      res.writeHead(m.status, { 'Content-Type': 'text/plain' });
      res.end(m.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.port = (server.address() as AddressInfo).port;
  r.url = `http://127.0.0.1:${r.port}${path}`;
  let closed = false;
  r.close = () =>
    new Promise<void>((resolve) => {
      if (closed) return resolve();
      closed = true;
      server.close(() => resolve());
      server.closeAllConnections();
    });
  t.teardown(() => r.close());
  return r;
}

// ---- An RFC 9421 / RFC 9530 verifier written from the RFCs, sharing no code with mta/webhooks/signing.ts. ----

/** RFC 8941 §3.3.3 sf-string: DQUOTE *chars DQUOTE with \" and \\ escapes. Returns [value, rest]. */
function parseSfString(s: string): [string, string] {
  if (s[0] !== '"') throw new Error(`expected sf-string at ${s}`);
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\') {
      out += s[++i];
    } else if (c === '"') {
      return [out, s.slice(i + 1)];
    } else {
      out += c;
    }
  }
  throw new Error('unterminated sf-string');
}

/** RFC 8941 §3.1.2 parameters: *( ";" key [ "=" bare-item ] ), bare items here being integers or strings. */
function parseParams(s: string): [Array<[string, string | number]>, string] {
  const params: Array<[string, string | number]> = [];
  while (s.startsWith(';')) {
    s = s.slice(1);
    const key = /^[a-z*][a-z0-9_\-.*]*/.exec(s)![0];
    s = s.slice(key.length);
    if (!s.startsWith('=')) {
      params.push([key, 1]);
      continue;
    }
    s = s.slice(1);
    if (s.startsWith('"')) {
      const [v, rest] = parseSfString(s);
      params.push([key, v]);
      s = rest;
    } else {
      const num = /^-?\d+/.exec(s)![0];
      params.push([key, Number(num)]);
      s = s.slice(num.length);
    }
  }
  return [params, s];
}

/** RFC 8941 §3.2 dictionary of inner lists (Signature-Input) — only what RFC 9421 §4.1 needs. */
function parseSignatureInput(field: string): Map<string, { components: string[]; params: Array<[string, string | number]> }> {
  const out = new Map<string, { components: string[]; params: Array<[string, string | number]> }>();
  for (const member of field.split(/,\s*(?=[a-z*][a-z0-9_\-.*]*=\()/)) {
    const eq = member.indexOf('=');
    const label = member.slice(0, eq);
    let rest = member.slice(eq + 1);
    if (!rest.startsWith('(')) throw new Error('Signature-Input member is not an inner list');
    rest = rest.slice(1);
    const components: string[] = [];
    while (!rest.startsWith(')')) {
      rest = rest.replace(/^ +/, '');
      const [c, after] = parseSfString(rest);
      components.push(c);
      rest = after.replace(/^ +/, '');
    }
    const [params, tail] = parseParams(rest.slice(1));
    if (tail.trim() !== '') throw new Error(`trailing characters in Signature-Input: ${tail}`);
    out.set(label, { components, params });
  }
  return out;
}

/** RFC 8941 §3.2 dictionary of byte sequences (Signature, Content-Digest): key=:base64:. */
function parseByteDict(field: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const member of field.split(/,\s*/)) {
    const m = /^([a-z*][a-z0-9_\-.*]*)=:([A-Za-z0-9+/=]*):$/.exec(member.trim());
    if (!m) throw new Error(`not a byte-sequence member: ${member}`);
    out.set(m[1]!, Buffer.from(m[2]!, 'base64'));
  }
  return out;
}

/** RFC 8941 §4.1.1.2 serialisation of an inner list with parameters (the @signature-params value, RFC 9421 §2.3). */
function serialiseInnerList(components: string[], params: Array<[string, string | number]>): string {
  const items = components.map((c) => `"${c.replace(/[\\"]/g, (x) => `\\${x}`)}"`).join(' ');
  const ps = params.map(([k, v]) => (typeof v === 'number' ? `;${k}=${v}` : `;${k}="${v.replace(/[\\"]/g, (x) => `\\${x}`)}"`)).join('');
  return `(${items})${ps}`;
}

export interface VerifyResult {
  ok: boolean;
  reason?: string;
  label?: string;
  keyId?: string;
  created?: number;
}

/**
 * Verifies a received POST per RFC 9530 (Content-Digest sha-256 over the raw body) and RFC 9421 §3.2 (rebuild the
 * signature base from the covered components and the parsed parameters, then Ed25519-verify with the key the
 * `fetchKey` callback returns for the keyid). `nowSec` checks that `created` is at most 300 s old (api.md §4.4).
 */
export async function verifyWebhook(
  headers: http.IncomingHttpHeaders,
  raw: Buffer,
  fetchKey: (keyId: string) => Promise<string | undefined>,
  nowSec: number,
): Promise<VerifyResult> {
  const digestField = headers['content-digest'];
  const inputField = headers['signature-input'];
  const sigField = headers['signature'];
  if (typeof digestField !== 'string' || typeof inputField !== 'string' || typeof sigField !== 'string') {
    return { ok: false, reason: 'missing headers' };
  }
  // RFC 9530 §2: the digest of the content as received.
  const digests = parseByteDict(digestField);
  const sha = digests.get('sha-256');
  if (!sha || !sha.equals(crypto.createHash('sha256').update(raw).digest())) return { ok: false, reason: 'digest mismatch' };

  const inputs = parseSignatureInput(inputField);
  const sigs = parseByteDict(sigField);
  const [label, input] = [...inputs.entries()][0]!;
  const signature = sigs.get(label);
  if (!signature) return { ok: false, reason: 'no signature for label' };
  const param = (k: string) => input.params.find(([n]) => n === k)?.[1];
  const keyId = param('keyid');
  const created = param('created');
  if (param('alg') !== 'ed25519' || typeof keyId !== 'string' || typeof created !== 'number') {
    return { ok: false, reason: 'bad parameters', label };
  }
  if (nowSec - created > 300) return { ok: false, reason: 'too old', label, keyId, created };

  // RFC 9421 §2.5: each covered component as `"name": value`, then `"@signature-params": <inner list>`, joined by LF.
  const lines: string[] = [];
  for (const c of input.components) {
    const v = headers[c];
    if (typeof v !== 'string') return { ok: false, reason: `component ${c} missing`, label };
    lines.push(`"${c}": ${v.trim()}`);
  }
  lines.push(`"@signature-params": ${serialiseInnerList(input.components, input.params)}`);
  const base = Buffer.from(lines.join('\n'), 'utf8');

  const pem = await fetchKey(keyId);
  if (!pem) return { ok: false, reason: 'unknown key', label, keyId };
  const key = crypto.createPublicKey({ key: pem, format: 'pem' });
  // RFC 9421 §3.3.6: Ed25519 over the base bytes.
  const ok = crypto.verify(null, base, key, signature);
  return ok ? { ok, label, keyId, created } : { ok: false, reason: 'bad signature', label, keyId, created };
}
