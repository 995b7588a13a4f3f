// Owns the api role's HTTP listeners: http.listen in plain HTTP or in HTTPS (with HSTS and the certificate of its TLS
// source, swapped for new connections on renewal), and the plain listener of http.plain_listen.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { HostPort } from '../config/keys.js';
import type { Config } from '../config/load.js';
import { configureHttpServer } from '../control-api/http-server.js';
import { plainListenerHandler, withHsts } from '../control-api/transport-security.js';
import type { TlsSource } from '../mta/smtp/tls.js';
import { bind } from './listen-error.js';

/**
 * Binds `server` to `listen` and resolves with the address it got (port 0 allowed). `reusePort`: SO_REUSEPORT, so
 * the sibling processes of `server.processes` bind the same port and the kernel spreads connections among them;
 * `exclusive` keeps a node:cluster child from handing the bind to the primary (its round-robin passes every
 * connection through one process).
 */
export function listenHttp(server: http.Server, listen: HostPort, reusePort = false): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: listen.port, host: listen.host, ...(reusePort ? { reusePort: true, exclusive: true } : {}) }, () => {
      const a = server.address() as AddressInfo;
      resolve({ host: a.address, port: a.port });
    });
  });
}

export interface HttpListenerOptions {
  config: Config;
  /** The running configuration (reloads change http.tls.hsts_max_age). */
  live: () => Config;
  /** The control plane (Koa's callback). */
  handler: http.RequestListener;
  /** The HTTPS certificate; undefined serves plain HTTP (http.tls.enabled off). */
  tls: TlsSource | undefined;
  acmeChallenge: (token: string) => Promise<string | undefined>;
  /** The https base URL redirects point at (known once http.listen is bound). */
  httpsBase: () => string;
  /** Whether Sluice serves a host name over https (the plain listener's redirects keep only such a name). */
  servesHost: (host: string) => Promise<boolean>;
  logger: Logger;
  /** Each server as soon as it is bound, so a failure of the next one can close it. */
  started: (server: http.Server) => void;
  /** Bind with SO_REUSEPORT (several serving processes: listenHttp). */
  reusePort?: boolean;
}

export interface HttpListeners {
  /** http.listen's bound address and what it speaks. */
  address: HostPort;
  scheme: 'http' | 'https';
  /** http.plain_listen's bound address, when configured. */
  plain: HostPort | undefined;
}

/**
 * Starts http.listen (HTTPS when `tls` is given) and, with HTTPS, http.plain_listen. Every server gets
 * configureHttpServer (keep-alive time, answers to what Node's parser refuses). A new pair from `tls` goes to new connections only
 * (setSecureContext); connections already open keep theirs, as on the SMTP listeners.
 */
export async function startHttpListeners(o: HttpListenerOptions): Promise<HttpListeners> {
  const { config, tls } = o;
  let server: http.Server;
  if (tls) {
    const pair = tls.current();
    const secure = https.createServer({ cert: pair.cert, key: pair.key }, withHsts(o.handler, () => o.live().http.tls.hstsMaxAge));
    tls.onChange((p) => secure.setSecureContext({ cert: p.cert, key: p.key }));
    server = secure;
  } else {
    server = http.createServer(o.handler);
  }
  configureHttpServer(server);
  const address = await bind('http.listen', config.http.listen, () => listenHttp(server, config.http.listen, o.reusePort));
  o.started(server);

  let plain: HostPort | undefined;
  const plainListen = config.http.plainListen;
  if (tls && plainListen) {
    const redirect = http.createServer(plainListenerHandler({ acmeChallenge: o.acmeChallenge, httpsBase: o.httpsBase, servesHost: o.servesHost, logger: o.logger }));
    configureHttpServer(redirect);
    plain = await bind('http.plain_listen', plainListen, () => listenHttp(redirect, plainListen, o.reusePort));
    o.started(redirect);
  }
  return { address, scheme: tls ? 'https' : 'http', plain };
}
