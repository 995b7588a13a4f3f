// Owns starting and stopping one smtp-server listener on a host:port (port 0 = ephemeral) and reporting its address.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection';
import { formatHostPort, type HostPort } from '../config/keys.js';

export interface SmtpListener {
  readonly name: string;
  /** The bound address (actual port when 0 was asked for). */
  address(): HostPort;
  listening(): boolean;
  close(): Promise<void>;
}

/** Extra listener options: `greetDelayMs` replaces smtp-server's fixed 100 ms early-talker pause before the 220. */
export interface ListenerExtras {
  greetDelayMs?: number;
}

// smtp-server 3.x waits a fixed 100 ms after accept before it greets (early-talker detection) and has no option for
// it. With one connection per message that caps a listener at 10 messages per second per concurrent client
// (measured with smtp-source: 101-111 ms before the 220, 1-2 ms for every other reply). We make the pause
// configurable, keeping the library's own connection-limit check and its "talk too soon" refusal of anything the
// client sends before the greeting. The override reads the delay from the server's options.
const GREET_DELAY = Symbol.for('sluice.greetDelayMs');
// smtp-server gives handlers no way to end a connection; the same override hands each session a function that
// sends a 421 (which smtp-server follows by closing), for a client the DATA stage must cut off (too slow).
const CLOSE = Symbol.for('sluice.closeSession');

/** Sends `421 <text>` on the session's connection and closes it (RFC 5321 §3.8). False for a foreign session. */
export function closeSession(session: object, text: string): boolean {
  const close = (session as Record<symbol, unknown>)[CLOSE];
  if (typeof close !== 'function') return false;
  (close as (text: string) => void)(text);
  return true;
}

let patched = false;
function patchConnectionInit(): void {
  if (patched) return;
  patched = true;
  type Conn = {
    _server: { options: Record<string | symbol, unknown>; connections: Set<unknown> };
    name: string;
    _setListeners(cb: () => void): void;
    send(code: number, text: string, tnx?: boolean): void;
    connectionReady(): void;
    session: object;
  };
  (SMTPConnection.prototype as unknown as { init(this: Conn): void }).init = function init(this: Conn) {
    // smtp-server keeps one session object per connection (reset in place), so this survives RSET and STARTTLS.
    Object.defineProperty(this.session, CLOSE, { value: (text: string) => this.send(421, text) });
    this._setListeners(() => {
      const opts = this._server.options;
      if (typeof opts.maxClients === 'number' && opts.maxClients > 0 && this._server.connections.size > opts.maxClients) {
        return this.send(421, this.name + ' Too many connected clients, try again in a moment', false);
      }
      const delay = typeof opts[GREET_DELAY] === 'number' ? (opts[GREET_DELAY] as number) : 100;
      if (delay <= 0) return this.connectionReady();
      setTimeout(() => this.connectionReady(), delay).unref();
    });
  };
}

/** Starts `options` on `listen`; resolves once bound, rejects on a bind error (port in use, no permission). */
export function startSmtpListener(name: string, listen: HostPort, options: SMTPServerOptions, extras: ListenerExtras = {}): Promise<SmtpListener> {
  patchConnectionInit();
  const server = new SMTPServer({ logger: false, ...options, [GREET_DELAY]: extras.greetDelayMs ?? 0 } as SMTPServerOptions);
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
