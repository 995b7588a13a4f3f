// Owns asking the OS for a free loopback port for a server that cannot report its own (Postfix, PostgreSQL, rspamd).
import net from 'node:net';

/** A free port on 127.0.0.1, released just before the caller's server binds it (a race the callers retry or accept). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
