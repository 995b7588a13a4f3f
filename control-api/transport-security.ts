// Owns what HTTP answers say about transport security: HSTS on every HTTPS answer, and the plain listener's answers
// (an ACME HTTP-01 key authorization, or a redirect to https — never the API, the console or a tracking link).
import type http from 'node:http';
import type { Logger } from 'pino';

/** RFC 8555 §8.3: the path a CA fetches an HTTP-01 token at; a token is base64url. */
const CHALLENGE = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]{1,256})$/;

/**
 * Wraps the HTTPS listener's handler so that every answer, whoever writes it (API, console, tracking, 404s), carries
 * `Strict-Transport-Security: max-age=<maxAge()>` (RFC 6797 §6.1). No `includeSubDomains`: other hosts of the
 * operator's domain may still serve plain HTTP (§6.1.2 makes it opt-in). Browsers ignore the header on a
 * connection with certificate errors (§8.1), so a self-signed pair cannot lock a browser out. `maxAge` is read per
 * request, so a reload that changes http.tls.hsts_max_age applies to the next answer.
 */
export function withHsts(handler: http.RequestListener, maxAge: () => number): http.RequestListener {
  return (req, res) => {
    res.setHeader('Strict-Transport-Security', `max-age=${maxAge()}`);
    handler(req, res);
  };
}

/** A Host header's name part, when it is a DNS name or an IP literal (anything else is not echoed into Location). */
function requestHost(header: string | undefined): string | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)(?::\d{1,5})?$/i.exec(header?.trim() ?? '');
  return m?.[1]?.toLowerCase();
}

/**
 * The https URL a plain request is sent to: the same host the client asked for (so a tracking link bound to a custom
 * tracking domain's name keeps its name), on the port of the https base URL, with the same path and query. A
 * missing or malformed Host falls back to the base URL's host.
 */
export function httpsLocation(hostHeader: string | undefined, target: string | undefined, httpsBase: string): string {
  const base = new URL(httpsBase);
  const host = requestHost(hostHeader) ?? base.hostname;
  // An absolute-form or asterisk-form target (RFC 9112 §3.2) is not echoed: it goes to the root.
  const path = target?.startsWith('/') && !target.startsWith('//') ? target : '/';
  return `https://${host}${base.port ? `:${base.port}` : ''}${path}`;
}

export interface PlainListenerDeps {
  /** The key authorization of a pending HTTP-01 token (ACME in this process), or undefined. */
  acmeChallenge: (token: string) => string | undefined;
  /** The https base URL (http.public_url, or the bound HTTPS address): its port is the redirect's. */
  httpsBase: () => string;
  logger: Logger;
}

/**
 * The plain-HTTP listener's handler (http.plain_listen, port 80): `GET`/`HEAD /.well-known/acme-challenge/<token>`
 * answers the key authorization (RFC 8555 §8.3: the CA fetches it on port 80 in clear) or 404; every other request
 * is redirected to https — 301 for GET and HEAD, 308 for any other method so that it is repeated with its method
 * and body (RFC 9110 §15.4.9; a 301 lets clients turn a POST into a GET). Nothing else is served in clear, and the
 * answers carry no HSTS header (RFC 6797 §7.2 forbids it over plain HTTP). Each request is one access-log line.
 */
export function plainListenerHandler(deps: PlainListenerDeps): http.RequestListener {
  const log = deps.logger.child({ component: 'http', listener: 'plain' });
  return (req, res) => {
    // The body is never read: drain it so that the connection can answer the next request.
    req.resume();
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const token = CHALLENGE.exec(path)?.[1];
    if (token !== undefined && (method === 'GET' || method === 'HEAD')) {
      const keyAuthorization = deps.acmeChallenge(token);
      const body = keyAuthorization ?? 'no such ACME challenge\n';
      res.writeHead(keyAuthorization === undefined ? 404 : 200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      res.end(method === 'HEAD' ? undefined : body);
    } else {
      const status = method === 'GET' || method === 'HEAD' ? 301 : 308;
      try {
        res.writeHead(status, { Location: httpsLocation(req.headers.host, req.url, deps.httpsBase()), 'Content-Length': 0 });
      } catch {
        // A target Node will not put in a header (ERR_INVALID_CHAR): a request no browser sends.
        res.writeHead(400, { 'Content-Length': 0 });
      }
      res.end();
    }
    log.info({ method, path, status: res.statusCode }, 'request');
  };
}
