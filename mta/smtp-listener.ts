// Owns starting and stopping one smtp-server listener on a host:port (port 0 = ephemeral) and reporting its address.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { formatHostPort, type HostPort } from '../config/keys.js';

export interface SmtpListener {
  readonly name: string;
  /** The bound address (actual port when 0 was asked for). */
  address(): HostPort;
  listening(): boolean;
  close(): Promise<void>;
}

/** Starts `options` on `listen`; resolves once bound, rejects on a bind error (port in use, no permission). */
export function startSmtpListener(name: string, listen: HostPort, options: SMTPServerOptions): Promise<SmtpListener> {
  const server = new SMTPServer({ logger: false, ...options });
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(new Error(`${name}: cannot listen on ${formatHostPort(listen)}: ${err.message}`));
    server.server.once('error', onError);
    server.listen(listen.port, listen.host, () => {
      server.server.off('error', onError);
      // After start, socket-level errors (resets, TLS failures) are per-connection; keep the listener alive.
      server.on('error', () => {});
      let open = true;
      resolve({
        name,
        address() {
          const a = server.server.address() as AddressInfo;
          return { host: a.address, port: a.port };
        },
        listening: () => open && server.server.listening,
        close: () =>
          new Promise<void>((done) => {
            open = false;
            server.close(() => done());
          }),
      });
    });
  });
}
