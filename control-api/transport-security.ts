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
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?\.?)(?::\d{1,5})?$/i.exec(header?.trim() ?? '');
  return m?.[1]?.toLowerCase().replace(/\.$/, '');
}

/**
 * A request target's host (absolute-form only) and its path with query: origin-form (`/a?b`) is itself;
 * absolute-form (`http://host/a?b`, RFC 9112 §3.2.2) gives its host — which wins over Host there — and its path and
 * query; asterisk-form, authority-form or anything unparseable goes to the root.
 */
function splitTarget(target: string | undefined): { host: string | undefined; path: string } {
  if (target?.startsWith('/') && !target.startsWith('//')) return { host: undefined, path: target };
  if (target && /^https?:\/\//i.test(target)) {
    try {
      const u = new URL(target);
      return { host: u.host, path: `${u.pathname}${u.search}` };
    } catch {
      // not a URL: the root below
    }
  }
  return { host: undefined, path: '/' };
}

/** The host name a plain request asked for (absolute-form target first, then Host), when it is well formed. */
export function askedHost(hostHeader: string | undefined, target: string | undefined): string | undefined {
  const fromTarget = splitTarget(target).host;
  return requestHost(fromTarget ?? hostHeader);
}

/**
 * The https URL a plain request is sent to: the host it asked for only when Sluice serves that name (`served`: the
 * https base URL's host, smtp.hostname, acme.hostnames, an active custom tracking domain — so a tracking link keeps
 * its name), else the base URL's host, never a name the client made up (`Host: evil.example` would make Sluice
 * send browsers anywhere); the port of the base URL; the path and query of the request (absolute-form too).
 */
export function httpsLocation(hostHeader: string | undefined, target: string | undefined, httpsBase: string, served: (host: string) => boolean): string {
  const base = new URL(httpsBase);
  const asked = askedHost(hostHeader, target);
  const host = asked !== undefined && (asked === base.hostname.toLowerCase() || served(asked)) ? asked : base.hostname;
  return `https://${host}${base.port ? `:${base.port}` : ''}${splitTarget(target).path}`;
}

export interface PlainListenerDeps {
  /** The key authorization of a pending HTTP-01 token (ACME's, in the store), or undefined. */
  acmeChallenge: (token: string) => Promise<string | undefined>;
  /** The https base URL (http.public_url, or the bound HTTPS address): its port is the redirect's. */
  httpsBase: () => string;
  /** Whether Sluice serves `host` (lower case, no port) over https: a redirect keeps only such a name. */
  servesHost: (host: string) => Promise<boolean>;
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
    // The body is never read: drain it so that the connection can answer the next request (http-server.ts bounds it).
    req.resume();
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const token = CHALLENGE.exec(path)?.[1];
    if (token !== undefined && (method === 'GET' || method === 'HEAD')) {
      const answer = (status: number, body: string) => {
        res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
        res.end(method === 'HEAD' ? undefined : body);
        log.info({ method, path, status }, 'request');
      };
      // The store out of reach: 503, so the CA's retry (or the next order) finds it back.
      deps.acmeChallenge(token).then(
        (keyAuthorization) => (keyAuthorization === undefined ? answer(404, 'no such ACME challenge\n') : answer(200, keyAuthorization)),
        () => answer(503, 'try again later\n'),
      );
      return;
    }
    const asked = askedHost(req.headers.host, req.url);
    // Unknown means not served: a failed look-up redirects to the base URL's host.
    void (asked === undefined ? Promise.resolve(false) : deps.servesHost(asked).catch(() => false)).then((served) => {
      const status = method === 'GET' || method === 'HEAD' ? 301 : 308;
      try {
        res.writeHead(status, { Location: httpsLocation(req.headers.host, req.url, deps.httpsBase(), () => served), 'Content-Length': 0 });
      } catch {
        // A target Node will not put in a header (ERR_INVALID_CHAR): a request no browser sends.
        res.writeHead(400, { 'Content-Length': 0 });
      }
      res.end();
      log.info({ method, path, status: res.statusCode }, 'request');
    });
  };
}
