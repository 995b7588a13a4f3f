// Owns the one-line start-up error for a listener that cannot bind: the key, the address, the cause and the fix.
import { ConfigError, formatHostPort, type HostPort } from '../config/keys.js';

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
