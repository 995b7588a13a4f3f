// Owns every reach-in into smtp-server's private parts: the overrides of SMTPConnection.prototype (greeting delay and
// client limit, closing a session, strict command lines and SASL credentials, the junk-command limit and the session
// deadline, one RFC 3463 status per reply, a pipelined group's replies in one write) and the check that they fit.
// The version is pinned in package.json; test/mta/smtp/listener.test.ts fails when an upgrade moves what they use.
import { performance } from 'node:perf_hooks';
import type { SMTPServer, SMTPServerOptions } from 'smtp-server';
import { SMTPConnection } from 'smtp-server/lib/smtp-connection';
import { smtpCommandOf, type SmtpCommandLabel } from '../metrics-labels.js';
import { isJunkCommand, judgeCommandLine, looksLikeTlsHello, saslCredentialsNotUtf8 } from './command-line.js';
import { REPLY, type SmtpReply } from './replies.js';
import { wireText } from './smtp-server-reply.js';

// smtp-server 3.x waits a fixed 100 ms after accept before it greets (early-talker detection) and has no option for
// it. With one connection per message that caps a listener at 10 messages per second per concurrent client
// (measured with smtp-source: 101-111 ms before the 220, 1-2 ms for every other reply). We make the pause
// configurable, keeping the library's own connection-limit check and its "talk too soon" refusal of anything the
// client sends before the greeting. The override reads the delay from the server's options.
const GREET_DELAY = Symbol.for('sluice.greetDelayMs');
// smtp-server gives handlers no way to end a connection; the same override hands each session a function that
// sends a 421 (which smtp-server follows by closing), for a client the DATA stage must cut off (too slow).
const CLOSE = Symbol.for('sluice.closeSession');
// Marks the servers Sluice starts. The overrides live on smtp-server's shared prototype, so every other SMTPServer
// in the process (tests' downstream sinks) must keep the library's own behaviour.
const OURS = Symbol.for('sluice.listener');
// The listener's observers (metrics): told of each session and each reply, from the one place every reply passes.
const OBSERVE = Symbol.for('sluice.observe');
// The command awaiting its reply on a connection, and when it came (performance.now(), ms): timed for the observer.
const PENDING = Symbol.for('sluice.pendingCommand');
const PENDING_AT = Symbol.for('sluice.pendingCommandAt');
// The session limits smtp-server has no option for (NOOP, RSET, VRFY and HELP each re-arm its idle timer, without end).
const LIMITS = Symbol.for('sluice.sessionLimits');
// The socket corked while a chunk of command lines is answered (holdReplies below), to uncork when it is done.
const HELD = Symbol.for('sluice.repliesHeld');

/**
 * Limits on a whole session, checked at each command line (not a SASL continuation): more than `junkCommands` junk
 * commands (NOOP, RSET, VRFY, HELP) since the last message ended → `421 4.7.0` (Postfix smtpd_junk_command_limit,
 * which also counts from the last delivered mail); a command once `deadlineMs` have passed since the connection →
 * `421 4.4.2`. Both close the connection. A session idle past the deadline is closed by the idle timeout, and a
 * DATA transfer under way is never cut by the deadline (its size cap and minimum rate bound it): the reply to the
 * next command is the 421. `now` is the injected clock.
 */
export interface SessionLimits {
  junkCommands: number;
  /** Infinity: no deadline. */
  deadlineMs: number;
  now: () => number;
}

/** Per connection: when it began, its junk commands since the last message, and the message count they follow. */
interface SessionCount {
  startedAt: number;
  junk: number;
  transactions: number;
}
const counts = new WeakMap<object, SessionCount>();

/** What a listener is told: each accepted connection, each reply code written, each command's time to its reply. */
export interface SessionObserver {
  session(): void;
  reply(code: number): void;
  command?(command: SmtpCommandLabel, seconds: number): void;
}

type Timed = Record<symbol, SmtpCommandLabel | number | undefined>;

/** Starts timing `command` on `conn` (a SASL continuation line counts as AUTH). */
function startTiming(conn: SMTPConnection, command: SmtpCommandLabel): void {
  (conn as unknown as Timed)[PENDING] = command;
  (conn as unknown as Timed)[PENDING_AT] = performance.now();
}

/**
 * Tells the observer how long the pending command took, at its reply. A 354 to DATA starts the `message` phase,
 * timed to the reply after the final dot (RFC 5321 §4.1.1.4).
 */
function endTiming(conn: SMTPConnection, observer: SessionObserver, code: number): void {
  const t = conn as unknown as Timed;
  const command = t[PENDING] as SmtpCommandLabel | undefined;
  if (command === undefined || !observer.command) return;
  const now = performance.now();
  observer.command(command, (now - (t[PENDING_AT] as number)) / 1000);
  if (code === 354 && command === 'DATA') {
    t[PENDING] = 'message';
    t[PENDING_AT] = now;
  } else t[PENDING] = undefined;
}

/**
 * The options that put a server under the overrides, with `greetDelayMs` instead of the library's 100 ms, the
 * observer and the session limits (none: no junk-command limit, no deadline).
 */
export function seamOptions(greetDelayMs: number, observer?: SessionObserver, limits?: SessionLimits): SMTPServerOptions {
  return { [GREET_DELAY]: greetDelayMs, [OURS]: true, [OBSERVE]: observer, [LIMITS]: limits } as SMTPServerOptions;
}

/** Sends `reply` (a 421: smtp-server then closes, RFC 5321 §3.8) on the session's connection. False for a foreign session. */
export function closeSession(session: object, reply: SmtpReply): boolean {
  const close = (session as Record<symbol, unknown>)[CLOSE];
  if (typeof close !== 'function') return false;
  (close as (reply: SmtpReply) => void)(reply);
  return true;
}

/** Every SMTPConnection method the overrides replace or call. */
export const SMTP_CONNECTION_METHODS = [
  'init',
  '_createParser',
  '_setListeners',
  'connectionReady',
  'send',
  '_onCommand',
  '_whenWritable',
  'close',
] as const;

/**
 * Throws when smtp-server's SMTPConnection lacks a method the overrides rely on: an upgrade that renamed one must
 * stop the listener from starting rather than silently lose a check.
 */
export function checkSmtpServerInternals(proto: object = SMTPConnection.prototype): void {
  for (const m of SMTP_CONNECTION_METHODS) {
    if (typeof (proto as Record<string, unknown>)[m] !== 'function') {
      throw new Error(`smtp-server internals changed: SMTPConnection.prototype.${m} is gone; re-check mta/smtp/smtp-server-seam.ts`);
    }
  }
}

/** The connection state the overrides read or write, with the type each must have (set in the constructor). */
export const SMTP_CONNECTION_FIELDS = {
  _server: 'object',
  _socket: 'object',
  name: 'string',
  secure: 'boolean',
  session: 'object',
  _ready: 'boolean',
  _upgrading: 'boolean',
  _nextHandler: 'boolean', // false between commands; a function while AUTH or DATA is in progress
  _unrecognizedCommands: 'number',
  _transactionCounter: 'number', // messages whose DATA ended on this connection
  _handlerPending: 'boolean', // a command's handler has not called back yet
  _dataStream: 'boolean', // false between transactions; the message stream while DATA is read and decided on
  _closing: 'boolean',
} as const;

/**
 * Throws when a live smtp-server connection (and its server) lacks state the overrides use: run by the seam's test
 * on a real connection, since fields, unlike methods, only exist on an instance.
 */
export function checkSmtpConnectionFields(conn: object): void {
  const c = conn as Record<string, unknown>;
  for (const [f, type] of Object.entries(SMTP_CONNECTION_FIELDS)) {
    if (typeof c[f] !== type) {
      throw new Error(`smtp-server internals changed: SMTPConnection#${f} is not a ${type}; re-check mta/smtp/smtp-server-seam.ts`);
    }
  }
  const server = c._server as Record<string, unknown>;
  if (typeof server.options !== 'object' || !(server.connections instanceof Set) || !('_closeTimeout' in server)) {
    throw new Error(
      'smtp-server internals changed: SMTPServer options, connections or _closeTimeout is gone; re-check mta/smtp/smtp-server-seam.ts',
    );
  }
}

/**
 * Replies held back while the rest of a pipelined group is answered: the final replies a client collects before it
 * acts (RFC 2920 §3.1: it may not act on one before it sent the whole group). Any other (220 to STARTTLS, 334, 354,
 * 221, 421) is one the client waits for, or the last: it goes out at once, with whatever was held before it.
 */
const holdsReply = (code: number) => (code >= 250 && code <= 252) || (code >= 400 && code < 600 && code !== 421);

/**
 * RFC 2920 §3.2 ("the server … should … store responses to grouped commands in an internal buffer" and send them
 * together): smtp-server writes each reply as the command's handler ends, one socket write (a system call, a
 * segment) each. While the parser answers one chunk of command lines the socket is corked, and uncorked when the
 * chunk is done: a pipelined MAIL, RCPT… DATA group gets one write for its replies up to the 354, which goes out at
 * once (a pipelining client, 3 recipients: system CPU 63–87 → 43–57 µs a message). A client that sends one command
 * per packet, as bench:relay's smtp-source does, sees no change: there a write per reply is ~6 % of the server's
 * CPU (writeUtf8String from send) and stays so. Bounded: a held
 * reply past half the socket's high-water mark flushes, so smtp-server's wait for 'drain' (its _whenWritable) never
 * waits on bytes we hold. Command mode only; message data is never held.
 */
function holdReplies(conn: SMTPConnection): void {
  const held = conn as unknown as Record<symbol, (SMTPConnection['_socket']) | undefined>;
  const socket = conn._socket;
  if (held[HELD] || conn._upgrading || socket.destroyed) return;
  socket.cork();
  held[HELD] = socket;
}

function flushReplies(conn: SMTPConnection): void {
  const held = conn as unknown as Record<symbol, (SMTPConnection['_socket']) | undefined>;
  const socket = held[HELD];
  if (!socket) return;
  held[HELD] = undefined;
  socket.uncork();
}

/** RFC 3463 status at the start of a reply text: the replies Sluice builds carry their own. */
const ENHANCED = /^[245]\.\d{1,3}\.\d{1,3}(?: |$)/;
/** smtp-server's contexts that mean "no enhanced status code" (the greeting, replies to HELO/EHLO). */
const NO_STATUS_CONTEXTS = new Set(['HELO', 'EHLO', 'LHLO']);

const optionsOf = (conn: SMTPConnection) => conn._server.options as unknown as Record<string | symbol, unknown>;
const isOurs = (conn: SMTPConnection) => optionsOf(conn)[OURS] === true;
const observerOf = (conn: SMTPConnection) => optionsOf(conn)[OBSERVE] as SessionObserver | undefined;
const limitsOf = (conn: SMTPConnection) => optionsOf(conn)[LIMITS] as SessionLimits | undefined;

/** The limit a command line breaks (see SessionLimits), counting it as junk when it is. */
function brokenLimit(conn: SMTPConnection, limits: SessionLimits, command: Buffer): SmtpReply | undefined {
  const count = counts.get(conn);
  if (!count) return undefined;
  if (limits.now() - count.startedAt >= limits.deadlineMs) return REPLY.sessionDeadline;
  const transactions = (conn as unknown as { _transactionCounter: number })._transactionCounter;
  if (transactions !== count.transactions) {
    // A message ended (accepted or refused): the client is sending mail, not stalling; count afresh (as Postfix).
    count.transactions = transactions;
    count.junk = 0;
  }
  if (isJunkCommand(command) && ++count.junk > limits.junkCommands) return REPLY.tooManyJunkCommands;
  return undefined;
}
const sendReply = (conn: SMTPConnection, reply: SmtpReply) => conn.send(reply.code, wireText(reply));

// The connection was told the listener is closing (once).
const TOLD_CLOSING = Symbol.for('sluice.toldClosing');

/**
 * Once the listener is closing: a session with nothing under way (no command handler pending, no DATA being read or
 * decided on, no TLS handshake) gets `421 4.3.2` now and is closed. Its next command would only get smtp-server's
 * 421 anyway, so waiting for it (up to the close grace, 30 s) only held the stop. A session mid-transaction finishes
 * it: the check runs again after each of its replies.
 */
function endIfClosing(conn: SMTPConnection): void {
  const c = conn as unknown as Record<string | symbol, unknown>;
  if (!conn._server._closeTimeout || c[TOLD_CLOSING] || c._closing || conn._upgrading) return;
  if (c._handlerPending || c._dataStream) return;
  c[TOLD_CLOSING] = true;
  sendReply(conn, REPLY.shuttingDown(conn.name));
}

/** Tells each of our sessions on `server` (whose close has begun) that it is closing, as endIfClosing says. */
export function closeIdleSessions(server: SMTPServer): void {
  for (const conn of server.connections as Set<SMTPConnection>) if (isOurs(conn)) endIfClosing(conn);
}

let installed = false;

/** Installs the overrides on SMTPConnection.prototype once (after checking they fit); they act on our servers only. */
export function installSmtpServerSeam(): void {
  if (installed) return;
  checkSmtpServerInternals();
  installed = true;
  const proto = SMTPConnection.prototype;
  const librarySend = proto.send;
  const libraryOnCommand = proto._onCommand;
  const libraryCreateParser = proto._createParser;

  // A parser per connection, and a new one after STARTTLS (its socket is the TLS one): see holdReplies.
  proto._createParser = function createParser(this: SMTPConnection) {
    const parser = libraryCreateParser.call(this);
    if (!isOurs(this)) return parser;
    const write = parser._write;
    parser._write = (chunk: Buffer, encoding: BufferEncoding, next: (err?: Error | null) => void) => {
      // Message data, or the rest of a chunk after DATA (the parser calls itself): not held, and the chunk's own
      // completion below flushes what its command lines held.
      if ((parser as unknown as { _dataMode: boolean })._dataMode) return write.call(parser, chunk, encoding, next);
      holdReplies(this);
      write.call(parser, chunk, encoding, (err?: Error | null) => {
        flushReplies(this);
        next(err);
      });
    };
    return parser;
  };

  proto.init = function init(this: SMTPConnection) {
    // smtp-server keeps one session object per connection (reset in place), so this survives RSET and STARTTLS.
    Object.defineProperty(this.session, CLOSE, { value: (reply: SmtpReply) => sendReply(this, reply) });
    const ours = isOurs(this);
    if (ours) observerOf(this)?.session();
    const limits = ours ? limitsOf(this) : undefined;
    if (limits) counts.set(this, { startedAt: limits.now(), junk: 0, transactions: 0 });
    if (ours && !this.secure) {
      // A ClientHello has no line break to wait for (or one by chance): judge the very first bytes as they arrive.
      // Registered before smtp-server pipes the socket into its parser, so it runs first; once the 421 closes the
      // connection the parser drops the chunk.
      this._socket.once('data', (chunk: Buffer) => {
        if (looksLikeTlsHello(chunk)) sendReply(this, REPLY.tlsOnPlaintextPort(this.name));
      });
    }
    this._setListeners(() => {
      const opts = optionsOf(this);
      if (typeof opts.maxClients === 'number' && opts.maxClients > 0 && this._server.connections.size > opts.maxClients) {
        // The library's own refusal (its text, no status) for a foreign server.
        const full = REPLY.tooManyClients(this.name);
        return this.send(full.code, ours ? wireText(full) : full.message, false);
      }
      const delay = typeof opts[GREET_DELAY] === 'number' ? (opts[GREET_DELAY] as number) : 100;
      if (delay <= 0) return this.connectionReady();
      setTimeout(() => this.connectionReady(), delay).unref();
    });
  };

  // RFC 2034 §3 / RFC 3463: with ENHANCEDSTATUSCODES on (startSmtpListener sets hideENHANCEDSTATUSCODES: false),
  // smtp-server prefixes its own replies with a status from its context (501 5.1.3 for a bad RCPT address, 552 5.3.4
  // for SIZE=, 501 5.5.4 for syntax). Our replies (the catalogue, mta/smtp/replies.ts) already start with their
  // status: those are sent as they are instead of getting a second one. Every refusal gets a status, also where the
  // library passes none (the 501s to a malformed EHLO, a 421 while a HELO is pending); the greeting and the 250 to
  // HELO/EHLO stay without, as RFC 2034 §3 says.
  proto.send = function send(this: SMTPConnection, code, data, context) {
    if (!isOurs(this)) return librarySend.call(this, code, data, context);
    const observer = observerOf(this);
    if (observer) {
      observer.reply(code);
      endTiming(this, observer, code);
    }
    if (typeof data === 'string' && ENHANCED.test(data)) librarySend.call(this, code, data, false);
    else if (code >= 400 && (context === false || (typeof context === 'string' && NO_STATUS_CONTEXTS.has(context)))) {
      librarySend.call(this, code, data, undefined);
    } else librarySend.call(this, code, data, context);
    const socket = this._socket;
    if (!holdsReply(code) || socket.writableLength >= socket.writableHighWaterMark / 2) flushReplies(this);
    // Closing: once this reply's command is done (its handler calls back after sending it), an idle session ends.
    if (this._server._closeTimeout && code !== 421) setImmediate(() => endIfClosing(this));
  };

  proto._onCommand = function onCommand(this: SMTPConnection, command, callback) {
    // Lines buffered during a TLS upgrade, before the greeting or while shutting down: the library's own handling.
    if (!isOurs(this) || this._upgrading || !this._ready || this._server._closeTimeout) {
      return libraryOnCommand.call(this, command, callback);
    }
    const inSasl = this._nextHandler !== false;
    // The lines of a SASL exchange (RFC 4954 §4) are timed as AUTH.
    if (observerOf(this)?.command) startTiming(this, inSasl ? 'AUTH' : smtpCommandOf(command));
    const fault = judgeCommandLine(command, inSasl);
    const next = () => setImmediate(() => this._whenWritable(callback ?? (() => undefined)));
    if (!fault) {
      if (saslCredentialsNotUtf8(command, inSasl)) {
        // Refused before smtp-server decodes them (with U+FFFD) and hands them to onAuth; the exchange ends here.
        this._nextHandler = false;
        sendReply(this, REPLY.authNotUtf8);
        return next();
      }
      const limits = limitsOf(this);
      const broken = limits && !inSasl ? brokenLimit(this, limits, command) : undefined;
      // 421: smtp-server closes the connection after it (RFC 5321 §3.8).
      if (broken) return sendReply(this, broken);
      return libraryOnCommand.call(this, command, callback);
    }
    // Not SMTP at all: 421 ends the session (RFC 5321 §3.8), as smtp-server does for `GET / HTTP/1.1`.
    if (fault === 'tls-handshake') return sendReply(this, REPLY.tlsOnPlaintextPort(this.name));
    if (fault === 'http-request') return sendReply(this, REPLY.httpRequest(this.name));
    // An AUTH exchange in progress ends here: a continuation line that is not even text is a malformed answer.
    this._nextHandler = false;
    // Counted with unrecognized commands, so a client talking a binary protocol is still cut off after ten lines.
    if (++this._unrecognizedCommands >= 10) return sendReply(this, REPLY.tooManyUnrecognized);
    // RFC 6531 §3.3; nothing of the line is used.
    sendReply(this, REPLY.badUtf8);
    next();
  };
}
