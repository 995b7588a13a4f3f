// Owns starting and stopping one smtp-server listener on a host:port (port 0 = ephemeral) and reporting its address,
// and the one adapter that reaches into smtp-server's connection internals (greeting, command lines, reply codes).
import { isUtf8 } from 'node:buffer';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection';
import { formatHostPort, type HostPort } from '../../config/keys.js';

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
// Marks the servers this module starts. The overrides below live on smtp-server's shared prototype, so every other
// SMTPServer in the process (tests' downstream sinks) must keep the library's own behaviour.
const OURS = Symbol.for('sluice.listener');

/** Sends `421 <text>` on the session's connection and closes it (RFC 5321 §3.8). False for a foreign session. */
export function closeSession(session: object, text: string): boolean {
  const close = (session as Record<symbol, unknown>)[CLOSE];
  if (typeof close !== 'function') return false;
  (close as (text: string) => void)(text);
  return true;
}

/** What a command line must not be; see `judgeCommandLine`. */
export type CommandLineFault = 'tls-handshake' | 'http-request' | 'bad-utf8';

/** HTTP methods: none is an SMTP verb. Postfix's smtpd_forbidden_commands default has CONNECT, GET and POST. */
const HTTP_METHODS = new Set(['CONNECT', 'GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH']);

/**
 * True for the first bytes of a TLS ClientHello: a TLS handshake record (content type 22, version 3.x), or an
 * SSLv2-compatible hello (length with the high bit set, message type 1). A client that starts TLS on a plaintext
 * port without STARTTLS (an implicit-TLS client on the wrong port) sends this instead of a command.
 */
export function looksLikeTlsHello(b: Buffer): boolean {
  if (b.length >= 2 && b[0] === 0x16 && b[1] === 0x03) return true;
  return b.length >= 4 && (b[0]! & 0x80) !== 0 && b[2] === 0x01 && (b[3] === 0x03 || b[3] === 0x00);
}

/**
 * Judges one command line as received (without its line break), before smtp-server decodes it. smtp-server turns
 * the bytes into text with `toString()`, which replaces every invalid UTF-8 sequence with U+FFFD: `\xff\xfe@x`
 * would become a different, valid address and be stored. RFC 6531 §3.3 allows UTF-8 in commands, never invalid
 * sequences, and NUL is not allowed anywhere in SMTP (RFC 5321 §4.1.1: commands are text). `inSasl`: the line
 * answers an AUTH challenge (base64), so its first word is not a command name.
 * - `tls-handshake`: a TLS ClientHello on a plaintext port; `http-request`: a browser or proxy (HTTP method as the
 *   command, `CONNECT host:port` included). Both end the session, as Postfix's smtpd_forbidden_commands does.
 * - `bad-utf8`: invalid UTF-8 or a NUL anywhere; refused with 500 5.5.2, nothing of it is used.
 */
export function judgeCommandLine(line: Buffer, inSasl: boolean): CommandLineFault | undefined {
  if (looksLikeTlsHello(line)) return 'tls-handshake';
  if (!inSasl) {
    const verb = /^[A-Za-z]+(?= |$)/.exec(line.subarray(0, 16).toString('latin1'))?.[0];
    if (verb && HTTP_METHODS.has(verb.toUpperCase())) return 'http-request';
  }
  if (line.includes(0) || !isUtf8(line)) return 'bad-utf8';
  return undefined;
}

/** The parts of smtp-server's SMTPConnection the overrides below use (see smtp-server's smtp-connection.d.ts). */
interface Conn {
  _server: { options: Record<string | symbol, unknown>; connections: Set<unknown>; _closeTimeout?: unknown };
  _socket: Socket;
  name: string;
  secure: boolean;
  session: object;
  _ready: boolean;
  _upgrading: boolean;
  _nextHandler: unknown;
  _unrecognizedCommands: number;
  _setListeners(cb: () => void): void;
  _whenWritable(next: () => void): void;
  _onCommand(command: Buffer, callback?: () => void): void;
  send(code: number, data?: string | string[] | null, context?: string | false): void;
  connectionReady(): void;
}

/** Every SMTPConnection member the adapter overrides or calls. */
export const SMTP_CONNECTION_METHODS = [
  'init',
  '_setListeners',
  'connectionReady',
  'send',
  '_onCommand',
  '_whenWritable',
  'close',
] as const;

/**
 * Throws when smtp-server's SMTPConnection lacks a method the overrides rely on: an upgrade that renamed one must
 * stop the listener from starting rather than silently lose a check (test/mta/smtp/listener.test.ts runs this too).
 */
export function checkSmtpServerInternals(proto: object = SMTPConnection.prototype): void {
  for (const m of SMTP_CONNECTION_METHODS) {
    if (typeof (proto as Record<string, unknown>)[m] !== 'function') {
      throw new Error(`smtp-server internals changed: SMTPConnection.prototype.${m} is gone; re-check mta/smtp/listener.ts`);
    }
  }
}

/** RFC 3463 status at the start of a reply text: the replies Sluice builds carry their own. */
const ENHANCED = /^[245]\.\d{1,3}\.\d{1,3}(?: |$)/;
/** smtp-server's contexts that mean "no enhanced status code" (the greeting, replies to HELO/EHLO). */
const NO_STATUS_CONTEXTS = new Set(['HELO', 'EHLO', 'LHLO']);

let patched = false;
function patchConnection(): void {
  if (patched) return;
  checkSmtpServerInternals();
  patched = true;
  const proto = SMTPConnection.prototype as unknown as Conn & { init(this: Conn): void };
  const librarySend = proto.send;
  const libraryOnCommand = proto._onCommand;

  proto.init = function init(this: Conn) {
    // smtp-server keeps one session object per connection (reset in place), so this survives RSET and STARTTLS.
    Object.defineProperty(this.session, CLOSE, { value: (text: string) => this.send(421, text) });
    const ours = this._server.options[OURS] === true;
    if (ours && !this.secure) {
      // A ClientHello has no line break to wait for (or one by chance): judge the very first bytes as they arrive.
      // Registered before smtp-server pipes the socket into its parser, so it runs first; once the 421 closes the
      // connection the parser drops the chunk.
      this._socket.once('data', (chunk: Buffer) => {
        if (looksLikeTlsHello(chunk)) refuse(this, 'tls-handshake');
      });
    }
    this._setListeners(() => {
      const opts = this._server.options;
      if (typeof opts.maxClients === 'number' && opts.maxClients > 0 && this._server.connections.size > opts.maxClients) {
        return this.send(421, `${ours ? '4.7.0 ' : ''}${this.name} Too many connected clients, try again in a moment`, false);
      }
      const delay = typeof opts[GREET_DELAY] === 'number' ? (opts[GREET_DELAY] as number) : 100;
      if (delay <= 0) return this.connectionReady();
      setTimeout(() => this.connectionReady(), delay).unref();
    });
  };

  // RFC 2034 §3 / RFC 3463: with ENHANCEDSTATUSCODES on (startSmtpListener sets hideENHANCEDSTATUSCODES: false),
  // smtp-server prefixes its own replies with a status from its context (501 5.1.3 for a bad RCPT address, 552 5.3.4
  // for SIZE=, 501 5.5.4 for syntax). Our replies (SmtpReply, decisions) already start with their status: those are
  // sent as they are instead of getting a second one. Every refusal gets a status, also where the library passes
  // none (the 501s to a malformed EHLO, a 421 while a HELO is pending); the greeting and the 250 to HELO/EHLO stay
  // without, as RFC 2034 §3 says.
  proto.send = function send(this: Conn, code, data, context) {
    if (this._server.options[OURS] !== true) return librarySend.call(this, code, data, context);
    if (typeof data === 'string' && ENHANCED.test(data)) return librarySend.call(this, code, data, false);
    if (code >= 400 && (context === false || (typeof context === 'string' && NO_STATUS_CONTEXTS.has(context)))) {
      return librarySend.call(this, code, data, undefined);
    }
    return librarySend.call(this, code, data, context);
  };

  proto._onCommand = function onCommand(this: Conn, command, callback) {
    // Lines buffered during a TLS upgrade, before the greeting or while shutting down: the library's own handling.
    if (this._server.options[OURS] !== true || this._upgrading || !this._ready || this._server._closeTimeout) {
      return libraryOnCommand.call(this, command, callback);
    }
    const fault = judgeCommandLine(command, this._nextHandler !== false);
    if (!fault) return libraryOnCommand.call(this, command, callback);
    if (fault !== 'bad-utf8') return refuse(this, fault);
    // An AUTH exchange in progress ends here: a continuation line that is not even text is a malformed answer.
    this._nextHandler = false;
    // Counted with unrecognized commands, so a client talking a binary protocol is still cut off after ten lines.
    if (++this._unrecognizedCommands >= 10) return this.send(421, '4.7.0 Error: too many unrecognized commands');
    // RFC 6531 §3.3 / Postfix smtpd: "500 5.5.2 Error: bad UTF-8 syntax"; nothing of the line is used.
    this.send(500, '5.5.2 bad UTF-8 syntax');
    setImmediate(() => this._whenWritable(callback ?? (() => undefined)));
  };
}

/** Ends a session that is not SMTP at all (421 closes it, RFC 5321 §3.8), as smtp-server does for `GET / HTTP/1.1`. */
function refuse(conn: Conn, fault: 'tls-handshake' | 'http-request'): void {
  conn.send(
    421,
    fault === 'tls-handshake'
      ? `4.7.0 ${conn.name} TLS handshake on a plaintext SMTP port (use STARTTLS), closing connection`
      : `4.7.0 ${conn.name} HTTP requests not allowed, closing connection`,
  );
}

/** Starts `options` on `listen`; resolves once bound, rejects on a bind error (port in use, no permission). */
export function startSmtpListener(name: string, listen: HostPort, options: SMTPServerOptions, extras: ListenerExtras = {}): Promise<SmtpListener> {
  patchConnection();
  const server = new SMTPServer({
    logger: false,
    ...options,
    // RFC 2034: every reply carries an RFC 3463 status (see the send override); advertised in EHLO.
    hideENHANCEDSTATUSCODES: false,
    [GREET_DELAY]: extras.greetDelayMs ?? 0,
    [OURS]: true,
  } as SMTPServerOptions);
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
