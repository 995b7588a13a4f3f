// Checks that an answer given before a request body was read never wedges the connection (issue 31 finding 4): the
// socket either drains the body and answers the next request, or says `Connection: close` and closes cleanly.
import net from 'node:net';
import t from 'tap';
import { DRAIN_BYTES_MAX } from '../../control-api/http-server.js';
import { startStack } from '../helpers/stack.js';

/** Longest a test waits for an answer or a close: the wedge lasted 66 s (the keep-alive timeout), so this fails it. */
const PATIENCE_MS = 15_000;

/** One HTTP/1.1 answer read off a raw socket. */
interface Answer {
  status: number;
  connection: string | undefined;
}

/** What a socket showed after the first request: its answer, then a second answer, or a clean close, or nothing. */
interface Exchange {
  first: Answer | undefined;
  second: Answer | undefined;
  /** 'end': the server closed (FIN); 'error:<code>': a reset or other failure; 'silent': neither within PATIENCE_MS. */
  outcome: 'end' | 'answered' | 'silent' | `error:${string}`;
}

/** Parses complete answers (head and Content-Length body) from the front of `buf`. */
function takeAnswers(buf: Buffer): { answers: Answer[]; rest: Buffer } {
  const answers: Answer[] = [];
  let rest = buf;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (rest.length < end + 4 + length) break;
    answers.push({ status: Number(head.split(' ')[1]), connection: /\r\nconnection: *([^\r]*)/i.exec(head)?.[1]?.toLowerCase() });
    rest = rest.subarray(end + 4 + length);
  }
  return { answers, rest };
}

/**
 * Writes `first` on a fresh connection to `port` and reads its answer. If the answer keeps the connection, writes
 * `second` on the same socket and reads that answer; if it says `close`, waits for the server's close.
 */
function exchange(port: number, first: Buffer | string, second: string): Promise<Exchange> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let buf: Buffer = Buffer.alloc(0);
    const seen: Answer[] = [];
    const done = (outcome: Exchange['outcome']) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ first: seen[0], second: seen[1], outcome });
    };
    const timer = setTimeout(() => done('silent'), PATIENCE_MS);
    s.on('data', (d: Buffer) => {
      const { answers, rest } = takeAnswers(Buffer.concat([buf, d]));
      buf = rest;
      for (const a of answers) {
        seen.push(a);
        if (seen.length === 1 && a.connection !== 'close') s.write(second);
        if (seen.length === 2) done('answered');
      }
    });
    s.on('end', () => done('end'));
    s.on('error', (err: NodeJS.ErrnoException) => done(`error:${err.code ?? err.message}`));
    s.write(first);
  });
}

/** A request with a Content-Length body. */
function post(path: string, headers: Record<string, string>, body: string): string {
  const lines = Object.entries({ Host: 'sluice.test', 'Content-Length': String(Buffer.byteLength(body)), ...headers }).map(([k, v]) => `${k}: ${v}`);
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** A request with a chunked body, sent as 64 KiB chunks. */
function postChunked(path: string, headers: Record<string, string>, body: string): string {
  const lines = Object.entries({ Host: 'sluice.test', 'Transfer-Encoding': 'chunked', ...headers }).map(([k, v]) => `${k}: ${v}`);
  let chunks = '';
  for (let i = 0; i < body.length; i += 65_536) {
    const piece = body.slice(i, i + 65_536);
    chunks += `${piece.length.toString(16)}\r\n${piece}\r\n`;
  }
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${chunks}0\r\n\r\n`;
}

const NEXT = 'GET /healthz HTTP/1.1\r\nHost: sluice.test\r\n\r\n';
const JSON_TYPE = { 'Content-Type': 'application/json' };

t.test('every early answer drains a small body or closes the connection cleanly; none wedges the socket', async (t) => {
  const stack = await startStack(t);
  const { key } = await stack.createAccount('acme');
  const api = { ...JSON_TYPE, 'X-Api-Key': key };
  // JSON malformed at byte 6, padded to 500 KB: the parser stops at byte 6 and the rest is never read.
  const malformed = '{"a":x' + ' '.repeat(500_000 - 6);
  // 'either': a 413 resumes the body it refuses, and a fast client's whole body may be read through before the answer
  // is written (the request then complete): keep-alive is then right; if not, the close must be clean.
  const cases: { name: string; request: string; status: number; connection: 'close' | 'keep-alive' | 'either' }[] = [
    { name: '400: JSON malformed at byte 6 of 500 KB', request: post('/tx/v1/send', api, malformed), status: 400, connection: 'close' },
    { name: '400: a 500 KB number', request: post('/tx/v1/send', api, `{"a":${'1'.repeat(500_000)}}`), status: 400, connection: 'close' },
    { name: '413: a chunked body over the limit', request: postChunked('/tx/v1/suppression-list', api, `{"a":"${'x'.repeat(1_200_000)}"}`), status: 413, connection: 'either' },
    { name: '413: a declared body over the limit', request: post('/tx/v1/suppression-list', api, 'x'.repeat(1_100_000)), status: 413, connection: 'either' },
    { name: '415: a console form of another type', request: post('/console/login', { 'Content-Type': 'text/plain' }, 'x'.repeat(300_000)), status: 415, connection: 'close' },
    { name: '401: no key, body never read', request: post('/inbound/v1/domains', JSON_TYPE, `{"domain":"${'x'.repeat(500_000)}"}`), status: 401, connection: 'close' },
    // A body of at most DRAIN_BYTES_MAX is read through after the answer: the connection stays usable.
    { name: '400: malformed at byte 6 of a small body', request: post('/tx/v1/send', api, '{"a":x' + ' '.repeat(DRAIN_BYTES_MAX - 6)), status: 400, connection: 'keep-alive' },
    { name: '401: a small body never read', request: post('/inbound/v1/domains', JSON_TYPE, '{"domain":"corp.example"}'), status: 401, connection: 'keep-alive' },
  ];
  for (const c of cases) {
    const got = await exchange(stack.http.port, c.request, NEXT);
    t.equal(got.first?.status, c.status, `${c.name}: answered`);
    const expected = c.connection === 'either' ? got.first?.connection : c.connection;
    if (c.connection === 'either') t.ok(expected === 'close' || expected === 'keep-alive', `${c.name}: Connection: ${expected}`);
    else t.equal(got.first?.connection, expected, `${c.name}: Connection: ${expected}`);
    if (expected === 'close') {
      t.equal(got.outcome, 'end', `${c.name}: the server closes the socket cleanly (FIN, no reset)`);
      t.equal(got.second, undefined, `${c.name}: nothing more on a closed connection`);
    } else {
      t.equal(got.outcome, 'answered', `${c.name}: the next request on the socket is answered`);
      t.equal(got.second?.status, 200, `${c.name}: GET /healthz`);
    }
  }
});

t.test('a fetch (undici) client: the request after an early answer gets its answer too', async (t) => {
  const stack = await startStack(t);
  const { key } = await stack.createAccount('acme');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const headers = { ...JSON_TYPE, 'X-Api-Key': key };
  for (let round = 0; round < 3; round++) {
    const bad = await fetch(`${base}/tx/v1/send`, { method: 'POST', headers, body: '{"a":x' + ' '.repeat(500_000) });
    t.equal(bad.status, 400, `round ${round}: malformed JSON → 400`);
    t.match(await bad.json(), { errors: ['malformed JSON body'] });
    const tooLarge = await fetch(`${base}/tx/v1/suppression-list`, { method: 'POST', headers, body: 'x'.repeat(1_100_000) });
    t.equal(tooLarge.status, 413, `round ${round}: too large → 413`);
    await tooLarge.arrayBuffer();
    const next = await fetch(`${base}/tx/v1/suppression-list`, { headers: { 'X-Api-Key': key }, signal: AbortSignal.timeout(PATIENCE_MS) });
    t.equal(next.status, 200, `round ${round}: the next request is answered`);
    await next.arrayBuffer();
  }
});
