// Owns one POST to a URL a tenant or a domain chose (webhooks, monitor webhooks, TLS-RPT reports): judged by the
// outbound-connection policy, dialled at the very address judged, and reported in our words (never the answer's body,
// an address or an errno).
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { refusedText, type TargetGuard } from '../delivery/target-guard.js';
import type { SignatureHeaders } from './signing.js';

/** What one POST came to. `error` is for records a tenant reads: what failed, in our words. */
export interface PostOutcome {
  statusCode: number | null;
  durationMs: number;
  error?: string;
}

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO$)/;

/**
 * A failed request in our words. Only what the tenant can act on: the kind of failure, never the address dialled
 * or the system's message (`connect ECONNREFUSED 127.0.0.1:1` names an internal address and says a port is closed).
 */
export function describeFailure(err: Error & { code?: string }): string {
  const code = err.code ?? '';
  if (err.message === 'timeout' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (TLS_FAILURE.test(code)) return 'TLS handshake failed';
  return 'connection failed';
}

/** Errors before any answer that say "this address did not take the connection": the next address may. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT']);

/** What a POST other than a webhook's sends differently (a TLS-RPT report, RFC 8460 §3). */
export interface PostOptions {
  /** Default `application/json`. */
  contentType?: string;
  /** Default `sluice-webhooks`. */
  userAgent?: string;
  /** Roots an https target's certificate must chain to (default Node's): the operator's `outbound.tls_ca_file` too. */
  ca?: readonly string[];
}

/**
 * POSTs `body` as JSON with `headers` to `url`; never throws. The host is resolved once and judged by `guard`; a
 * refused target is never dialled, and the request goes to the judged addresses only (the next one on a refused
 * connection). Redirects are not followed (a 3xx is recorded as such). The answer's body is
 * read and dropped. `timeoutMs` bounds everything: look-up, connect and answer.
 */
export function postJson(
  guard: Pick<TargetGuard, 'resolve'>,
  url: string,
  body: Buffer,
  headers: SignatureHeaders | Record<string, never>,
  timeoutMs: number,
  o: PostOptions = {},
): Promise<PostOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    let req: http.ClientRequest | undefined;
    const finish = (o: Omit<PostOutcome, 'durationMs'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...o, durationMs: Math.round(performance.now() - started) });
    };
    const timer = setTimeout(() => {
      finish({ statusCode: null, error: 'timeout' });
      req?.destroy(new Error('timeout'));
    }, timeoutMs);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      finish({ statusCode: null, error: 'invalid url' });
      return;
    }
    const tls = target.protocol === 'https:';
    const port = target.port ? Number(target.port) : tls ? 443 : 80;
    const name = target.hostname.replace(/^\[|\]$/g, '');
    void guard.resolve(name, port).then((check) => {
      if (done) return;
      if (!check.ok) {
        const error = check.kind === 'refused' ? refusedText(check.refused) : check.temp ? 'DNS lookup failed' : 'host not found';
        return finish({ statusCode: null, error });
      }
      // Dial the judged address itself (the keep-alive pool is keyed by it, so no socket opened for another address
      // is reused); the name stays in the Host header and, for https, in SNI and the certificate check.
      const attempt = (i: number) => {
        const address = check.addresses[i]!;
        req = (tls ? https : http).request({
          protocol: target.protocol,
          host: address,
          port,
          path: `${target.pathname}${target.search}`,
          method: 'POST',
          // A request with roots of its own gets a connection of its own (the pool's sockets verified against others).
          agent: o.ca ? false : tls ? agents.https : agents.http,
          ...(o.ca ? { ca: [...o.ca] } : {}),
          ...(tls && net.isIP(name) === 0 ? { servername: name } : {}),
          headers: {
            Host: target.host,
            'Content-Type': o.contentType ?? 'application/json',
            'Content-Length': String(body.length),
            'User-Agent': o.userAgent ?? 'sluice-webhooks',
            ...headers,
          },
        });
        let answered = false;
        req.on('error', (err: Error & { code?: string }) => {
          // Another judged address of the name may take the connection (as happy eyeballs would).
          if (!answered && !done && CONNECT_FAILURES.has(err.code ?? '') && i + 1 < check.addresses.length) return attempt(i + 1);
          finish({ statusCode: null, error: describeFailure(err) });
        });
        req.on('response', (res) => {
          answered = true;
          res.resume();
          res.on('end', () => finish({ statusCode: res.statusCode ?? null }));
          res.on('error', () => finish({ statusCode: res.statusCode ?? null }));
        });
        req.end(body);
      };
      attempt(0);
    }, () => finish({ statusCode: null, error: 'DNS lookup failed' }));
  });
}
