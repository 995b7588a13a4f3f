// Owns the start-up errors of listeners that cannot bind: one line each with the key, the address, the cause and the
// fix, and a probe of every configured address before the start so that all of them are named at once.
import net from 'node:net';
import { ConfigError, ConfigErrors, formatHostPort, type HostPort } from '../config/keys.js';
import type { Config } from '../config/load.js';
import type { Role } from './roles.js';

/**
 * Turns a bind error of the listener configured by `key` into a ConfigError (exit code 2, one line), e.g.
 * `smtp.mx.listen 0.0.0.0:25: permission denied (EACCES): ports below 1024 need …`. Ports below 1024 need root or
 * CAP_NET_BIND_SERVICE on Linux (capabilities(7)); Sluice should run as neither root nor with a shell around it, so
 * the fixes named are the systemd unit, setcap on the node binary, or a high port behind a redirect.
 */
export function listenError(key: string, listen: HostPort, err: unknown): ConfigError {
  const e = err as NodeJS.ErrnoException;
  const where = `${key} ${formatHostPort(listen)}`;
  switch (e.code) {
    case 'EACCES':
    case 'EPERM':
      return new ConfigError(
        where,
        `permission denied (${e.code}): ports below 1024 need CAP_NET_BIND_SERVICE; run Sluice under contrib/sluice.service ` +
          `(AmbientCapabilities=CAP_NET_BIND_SERVICE), or \`setcap cap_net_bind_service=+ep ${process.execPath}\`, ` +
          'or listen above 1024 behind a port redirect (README: "Running on a VM")',
      );
    case 'EADDRINUSE':
      return new ConfigError(
        where,
        `address already in use (EADDRINUSE): another process listens there (\`ss -ltnp 'sport = :${listen.port}'\` shows which); stop it or choose another port`,
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError(where, `address not available (EADDRNOTAVAIL): ${listen.host} is not an address of this machine`);
    default:
      return new ConfigError(where, `cannot listen: ${e.message}${e.code ? ` (${e.code})` : ''}`);
  }
}

/** Runs `start` (binding the listener of config key `key`); a bind error becomes one line naming the key (exit 2). */
export async function bind<T>(key: string, listen: HostPort, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw listenError(key, listen, err);
  }
}

/** The listeners a `sluice serve` of `roles` binds (bin/server.ts, http-listeners.ts, smtp-roles.ts), by config key. */
export function plannedListeners(config: Config, roles: readonly Role[]): { key: string; listen: HostPort }[] {
  const out: { key: string; listen: HostPort }[] = [];
  const add = (key: string, listen: HostPort | undefined) => {
    if (listen) out.push({ key, listen });
  };
  if (roles.includes('api')) {
    add('http.listen', config.http.listen);
    if (config.http.tls.enabled) add('http.plain_listen', config.http.plainListen);
  }
  add('http.metrics_listen', config.http.metricsListen);
  if (roles.includes('mx')) add('smtp.mx.listen', config.smtp.mx.listen);
  if (roles.includes('submission')) {
    add('smtp.submission.listen', config.smtp.submission.listen);
    add('smtp.submission.tls_listen', config.smtp.submission.tlsListen);
  }
  return out;
}

/**
 * Binds and at once closes each planned address, all together, and throws every failure (listenError's line each):
 * the listeners themselves start one after another and stop at the first, so a start with three busy ports would
 * otherwise name one per attempt. Port 0 is skipped (the kernel picks a free one). `reusePort` as the real binds
 * (SO_REUSEPORT with several processes). Another process taking an address between probe and bind still fails there.
 */
export async function probeListeners(planned: readonly { key: string; listen: HostPort }[], reusePort: boolean): Promise<void> {
  const results = await Promise.all(planned.filter((p) => p.listen.port !== 0).map((p) => probe(p.key, p.listen, reusePort)));
  const problems = results.filter((r): r is ConfigError => r !== undefined);
  if (problems.length === 1) throw problems[0] as ConfigError;
  if (problems.length > 1) throw new ConfigErrors(problems);
}

function probe(key: string, listen: HostPort, reusePort: boolean): Promise<ConfigError | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err) => resolve(listenError(key, listen, err)));
    server.listen({ port: listen.port, host: listen.host, exclusive: true, ...(reusePort ? { reusePort: true } : {}) }, () => server.close(() => resolve(undefined)));
  });
}
