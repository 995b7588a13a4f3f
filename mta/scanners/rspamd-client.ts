// Owns talking to rspamd's normal worker over HTTP (POST /checkv2): one message in, its action, score and symbols out.
import http from 'node:http';
import https from 'node:https';
import type { MessageSource } from '../../storage/message-source.js';

/** rspamd's answer, reduced to what the spam step uses. `action` is rspamd's word (`reject`, `add header`, …). */
export type RspamdResult =
  | { ok: true; action: string; score: number; requiredScore: number; symbols: string[] }
  | { ok: false; error: string };

/** The envelope facts rspamd scores with (sent as request headers, rspamd's protocol). */
export interface RspamdMessage {
  /** The message, streamed to rspamd (a large one is never assembled in memory for it). */
  message: MessageSource;
  clientIp: string;
  helo: string;
  mailFrom: string;
  rcptTo: string[];
  queueId?: string;
  /** The authenticated sender of outbound mail: rspamd's `User` header marks the message as outbound (submitted). */
  user?: string;
  /** Our MTA's name (`MTA-Name`), as rspamd's milter passes the MTA's: rspamd knows whose trace fields are local. */
  mtaName?: string;
}

export interface RspamdClient {
  /** Never throws: connection errors, timeouts, non-200 replies and malformed JSON all come back as `ok: false`. */
  check(msg: RspamdMessage): Promise<RspamdResult>;
}

/** Header values rspamd reads may not carry CR or LF (they come from the SMTP session, but never trust). */
const clean = (s: string) => s.replace(/[\r\n]/g, '');

/**
 * A client for the rspamd worker at `url` (e.g. `http://127.0.0.1:11333`; `/checkv2` is appended). Each check has a
 * deadline of `timeoutMs` for the whole exchange. The envelope goes in rspamd's request headers: `IP`, `Helo`,
 * `From`, one `Rcpt` per recipient, `Queue-Id`, `MTA-Name`, and for outbound mail `User`.
 */
export function createRspamdClient(opts: { url: string; timeoutMs: number }): RspamdClient {
  const endpoint = new URL(`${opts.url.replace(/\/+$/, '')}/checkv2`);
  const transport = endpoint.protocol === 'https:' ? https : http;
  return {
    check(msg) {
      return new Promise<RspamdResult>((resolve) => {
        let settled = false;
        const done = (r: RspamdResult) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(r);
        };
        const headers: http.OutgoingHttpHeaders = {
          'Content-Length': msg.message.size,
          IP: clean(msg.clientIp.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '')),
          Helo: clean(msg.helo),
          From: clean(msg.mailFrom),
          Rcpt: msg.rcptTo.map(clean),
        };
        if (msg.queueId) headers['Queue-Id'] = clean(msg.queueId);
        if (msg.user) headers.User = clean(msg.user);
        if (msg.mtaName) headers['MTA-Name'] = clean(msg.mtaName);
        const req = transport.request(endpoint, { method: 'POST', headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => done({ ok: false, error: `rspamd: ${err.message}` }));
          res.on('end', () => {
            if (res.statusCode !== 200) return done({ ok: false, error: `rspamd: HTTP ${res.statusCode}` });
            try {
              done(parseCheckReply(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
            } catch {
              done({ ok: false, error: 'rspamd: reply is not JSON' });
            }
          });
        });
        const timer = setTimeout(() => {
          req.destroy();
          done({ ok: false, error: `rspamd: no answer within ${opts.timeoutMs} ms` });
        }, opts.timeoutMs);
        req.on('error', (err) => done({ ok: false, error: `rspamd: ${err.message}` }));
        const body = msg.message.open();
        body.on('error', (err) => {
          req.destroy();
          done({ ok: false, error: `rspamd: reading the message: ${err.message}` });
        });
        // pipe() honours backpressure: the message moves at the pace rspamd reads it.
        body.pipe(req);
      });
    },
  };
}

/** Validates a /checkv2 JSON reply: `action` (string) and `score` (number) are required, the rest is optional. */
export function parseCheckReply(body: unknown): RspamdResult {
  if (typeof body !== 'object' || body === null) return { ok: false, error: 'rspamd: reply is not an object' };
  const b = body as { action?: unknown; score?: unknown; required_score?: unknown; symbols?: unknown };
  if (typeof b.action !== 'string' || typeof b.score !== 'number') {
    return { ok: false, error: 'rspamd: reply lacks action or score' };
  }
  const symbols = typeof b.symbols === 'object' && b.symbols !== null ? Object.keys(b.symbols).sort() : [];
  return {
    ok: true,
    action: b.action,
    score: b.score,
    requiredScore: typeof b.required_score === 'number' ? b.required_score : NaN,
    symbols,
  };
}
