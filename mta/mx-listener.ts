// Owns the MX listener's SMTP session: who may connect, which recipients are accepted (served domains only, never
// a relay), what DATA must look like (size, bare CR/LF, hop count), the Received field, and handing the message on.
import { domainToASCII } from 'node:url';
import pino, { type Logger } from 'pino';
import type { SMTPServerAddress, SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import { dataGuardReply, readGuarded } from './data-guard.js';
import { relayDenied, SmtpReply, toSmtpReply } from './smtp-reply.js';
import type { TlsPair } from './tls.js';

/** The message as the MX has it at the end of DATA (same shape as inbound-pipeline's InboundMessage). */
export interface MxMessage {
  /** Envelope sender as given ('' for the null sender). */
  mailFrom: string;
  /** Accepted recipients, each `local@domain` with the domain as a lower-case A-label without trailing dot. */
  rcptTo: string[];
  clientIp: string;
  /** The EHLO/HELO name (lower-cased by smtp-server), '' if none. */
  helo: string;
  /** The session ran over TLS (STARTTLS). */
  tls: boolean;
  /** The message with our Received field prepended; CRLF line ends only (bare CR/LF were refused). */
  raw: Buffer;
}

/** The reply to DATA an `onMessage` handler decides: code, RFC 3463 enhanced status and text. */
export interface MxReply {
  code: number;
  status: string;
  message: string;
}

/** The served domain for a name (lower-case A-label, no trailing dot), or undefined: relay denied. */
export type ServedDomainLookup = (name: string) => { id: number } | undefined;

export interface MxPolicy {
  /** `smtp.hostname`: greeting, Received `by`. */
  hostname: string;
  tls: TlsPair;
  /** storage/inbound-domains.ts `findServedDomain`: a provisioned domain or an alias of one. */
  findServedDomain: ServedDomainLookup;
  /** `smtp.mx.max_message_bytes`: advertised with SIZE (RFC 1870) and enforced at MAIL and after DATA. */
  maxMessageBytes: number;
  /** Recipients per transaction (default 100: RFC 5321 §4.5.3.1.8 minimum buffer). */
  maxRecipients?: number;
  /** Concurrent sessions from one client address (default 50: Postfix smtpd_client_connection_count_limit). */
  maxConnectionsPerIp?: number;
  /** Client addresses not subject to maxConnectionsPerIp (default: loopback). */
  perIpCapExempt?: (ip: string) => boolean;
  /** Concurrent sessions in all (default 1000). */
  maxConnections?: number;
  /** Received fields a message may arrive with (default 50: Postfix hopcount_limit). */
  maxHops?: number;
  /** Idle time allowed while the client owes us a command or data (default 300 s: RFC 5321 §4.5.3.2.7). */
  idleTimeoutMs?: number;
  /** Grace for open sessions once the listener closes (default 30 s). */
  closeTimeoutMs?: number;
  /**
   * Runs the content stage for an accepted message and returns the one reply to DATA. Only called for a message
   * received in full that passed size, bare-CR/LF and hop checks; never for a session that ended mid-DATA. A
   * 2xx reply must only be returned once the message is durably committed. Throwing answers 451 4.3.0.
   * When absent (nothing wired yet) DATA answers 451 4.3.2 — never 250.
   */
  onMessage?: (msg: MxMessage) => Promise<MxReply>;
  /**
   * Optional RCPT-time check after the relay decision (e.g. inbound-pipeline `checkRecipient`: a blocklisted client
   * or sender refused at the earliest stage that knows). A reply refuses that recipient.
   */
  checkRecipient?: (q: { mailFrom: string; clientIp: string; rcpt: string }) => MxReply | undefined;
  /** Clock for the Received date. */
  now?: () => number;
  logger?: Logger;
}

/** 127.0.0.0/8, ::1 and IPv4-mapped loopback. */
function isLoopback(ip: string): boolean {
  return ip === '::1' || ip.startsWith('127.') || ip.startsWith('::ffff:127.');
}

/** Defaults of the optional limits in MxPolicy. */
export const MX_DEFAULTS = Object.freeze({
  maxRecipients: 100,
  maxConnectionsPerIp: 50,
  maxConnections: 1000,
  maxHops: 50,
  idleTimeoutMs: 300_000,
  closeTimeoutMs: 30_000,
});

/** Lower-cased domain part of an address, without a trailing dot; '' when there is none. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? '' : address.slice(at + 1).toLowerCase().replace(/\.$/, '');
}

// RFC 5321 §4.1.2 Dot-string of atext (RFC 6531 §3.3 adds UTF8-non-ascii), minus "%" and "!": they are atext but
// old MTAs route on them (percent hack, bang paths), so a downstream could relay on our behalf. Quoted-string local
// parts are refused for the same reason ("a@evil"@ours, nodemailer GHSA-mm7p-fcc7-pg87).
const LOCAL_ATOM = "[A-Za-z0-9#$&'*+\\-/=?^_`{|}~\\u{80}-\\u{10FFFF}]+";
const LOCAL_PART = new RegExp(`^${LOCAL_ATOM}(?:\\.${LOCAL_ATOM})*$`, 'u');
const LDH_DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

/** RFC 6531 §3.5: 553 with X.6.7 for a non-ASCII address in a transaction that did not declare SMTPUTF8. */
const needsSmtpUtf8 = () => new SmtpReply(553, '5.6.7', 'Must declare SMTPUTF8 to send unicode address');

export type RecipientDecision = { ok: true; address: string; domainId: number } | { ok: false; reply: SmtpReply };

/**
 * Decides one RCPT address before any filter runs (ARCHITECTURE invariant 4). Accepted only when the local part is
 * a plain Dot-string without "%" or "!" and the domain — taken after the last "@", case-folded, one trailing dot
 * dropped, IDN converted to an A-label — is a served domain or alias. Everything else (foreign domains, IP
 * literals, quoted or routing local parts, no domain at all) is `550 5.7.1` relay denied, whatever the sender or
 * client. smtp-server has already stripped a source route (RFC 5321 App. C), so the final address is what we judge.
 * A non-ASCII local part without SMTPUTF8 is `553 5.6.7`. `address` is the normalised form handed on. The listener
 * runs smtp-server with lenientAddressParsing, so trailing dots and odd syntax reach this judgement instead of a
 * bare `501` from the library.
 */
export function classifyRecipient(rcpt: string, smtpUtf8: boolean, findServedDomain: ServedDomainLookup): RecipientDecision {
  const denied = { ok: false as const, reply: relayDenied(rcpt) };
  const at = rcpt.lastIndexOf('@');
  if (at <= 0) return denied;
  const local = rcpt.slice(0, at);
  // Only the local part tells: smtp-server hands over an A-label domain (xn--…) already decoded to Unicode, and
  // the domain is re-encoded to an A-label below either way.
  if (NON_ASCII.test(local) && !smtpUtf8) return { ok: false, reply: needsSmtpUtf8() };
  let domain = rcpt.slice(at + 1).replace(/\.$/, '');
  // RFC 5321 §4.1.3 address literals name a host, not a provisioned domain: never ours to accept.
  if (domain.startsWith('[') || !LOCAL_PART.test(local)) return denied;
  domain = NON_ASCII.test(domain) ? domainToASCII(domain) : domain.toLowerCase();
  if (!LDH_DOMAIN.test(domain)) return denied;
  const served = findServedDomain(domain);
  if (!served) return denied;
  return { ok: true, address: `${local}@${domain}`, domainId: served.id };
}

/** Received fields in the header section of `raw` (CRLF line ends), for loop detection (RFC 5321 §6.3). */
export function countReceived(raw: Buffer): number {
  if (raw.length >= 2 && raw[0] === 0x0d && raw[1] === 0x0a) return 0;
  const end = raw.indexOf('\r\n\r\n');
  const header = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  let n = 0;
  for (const line of header.split('\r\n')) if (/^received[ \t]*:/i.test(line)) n++;
  return n;
}

/** RFC 5322 §3.3 date-time in UTC, e.g. `Sun, 22 Nov 2026 12:00:00 +0000`. */
export function rfc5322Date(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000');
}

/** A token safe inside a Received comment: printable ASCII without parentheses or backslash, at most 64 chars. */
function commentSafe(s: string): string {
  return s.replace(/[^\x21-\x7e]|[()\\]/g, '?').slice(0, 64);
}

export interface ReceivedInfo {
  hostname: string;
  helo: string;
  clientIp: string;
  /** TLS protocol and cipher when the session ran over TLS. */
  tls?: { version: string; cipher: string } | undefined;
  /** RFC 3848 / RFC 6531 §3.7.3 `with` protocol: SMTP, ESMTP, ESMTPS, UTF8SMTP, UTF8SMTPS. */
  protocol: string;
  id: string;
  /** The `for` clause, given only for a single recipient (as Postfix does, so a Bcc list is not exposed). */
  rcpt?: string | undefined;
  date: number;
}

/**
 * The trace field we prepend (RFC 5321 §4.4):
 * `Received: from <helo> ([ip]) (using <tls>) by <hostname> (Sluice) with <proto> id <id> for <rcpt>; <date>`.
 * A HELO that is neither a domain nor an address literal is replaced by the client's address literal and shown,
 * defanged, in the comment; IPv6 literals use the `IPv6:` tag (RFC 5321 §4.1.3).
 */
export function receivedHeader(r: ReceivedInfo): string {
  const literal = r.clientIp.includes(':') ? `[IPv6:${r.clientIp}]` : `[${r.clientIp}]`;
  const heloOk = /^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/i.test(r.helo) || /^\[(?:IPv6:)?[0-9a-f:.]+\]$/i.test(r.helo);
  const from = heloOk ? `from ${r.helo} (${literal})` : `from ${literal} (${literal} helo=${commentSafe(r.helo) || 'none'})`;
  const lines = [`Received: ${from}`];
  if (r.tls) lines.push(`\t(using ${commentSafe(r.tls.version)} with cipher ${commentSafe(r.tls.cipher)})`);
  lines.push(`\tby ${r.hostname} (Sluice) with ${r.protocol} id ${r.id}`);
  lines.push(r.rcpt ? `\tfor <${r.rcpt}>; ${rfc5322Date(r.date)}` : `\t; ${rfc5322Date(r.date)}`);
  return lines.join('\r\n') + '\r\n';
}

function protocolOf(session: SMTPServerSession): string {
  const secure = session.secure ? 'S' : '';
  if (session.envelope.smtpUtf8) return `UTF8SMTP${secure}`;
  return `${session.openingCommand === 'EHLO' ? 'ESMTP' : 'SMTP'}${secure}`;
}

/** The reply smtp-server should send for a handler's decision; unknown codes are temporary (invariant 3). */
function replyToCallback(reply: MxReply): { err: SmtpReply | null; message?: string } {
  if (reply.code >= 200 && reply.code < 300) return { err: null, message: `${reply.status} ${reply.message}` };
  if (reply.code >= 400 && reply.code < 600) return { err: new SmtpReply(reply.code, reply.status, reply.message) };
  return { err: toSmtpReply(undefined) };
}

/**
 * smtp-server options for the MX: STARTTLS offered, no AUTH, SIZE advertised, SMTPUTF8 and 8BITMIME advertised,
 * ENHANCEDSTATUSCODES not advertised (our replies carry their codes in the text; smtp-server would add a second).
 * Connection caps answer `421 4.7.0` at connect; RCPT: `452 4.5.3` past the cap, then `classifyRecipient`;
 * DATA: the guard (552 5.3.4 / 550 5.6.0), hop count (554 5.4.6), Received prepended, then `onMessage`.
 * The returned options keep per-listener connection counts: build one per listener.
 */
export function mxOptions(policy: MxPolicy): SMTPServerOptions {
  const limits = {
    maxRecipients: policy.maxRecipients ?? MX_DEFAULTS.maxRecipients,
    maxConnectionsPerIp: policy.maxConnectionsPerIp ?? MX_DEFAULTS.maxConnectionsPerIp,
    maxConnections: policy.maxConnections ?? MX_DEFAULTS.maxConnections,
    maxHops: policy.maxHops ?? MX_DEFAULTS.maxHops,
  };
  const maxBytes = policy.maxMessageBytes;
  const now = policy.now ?? Date.now;
  const log = (policy.logger ?? pino({ level: 'silent' })).child({ component: 'mx' });
  // Sessions counted against the caps (by session id), so a refused one is not subtracted at close.
  const counted = new Map<string, string>();
  const perIp = new Map<string, number>();
  // The normalised form of each accepted RCPT, keyed by the object smtp-server keeps in envelope.rcptTo.
  const normalised = new WeakMap<SMTPServerAddress, string>();

  return {
    name: policy.hostname,
    banner: 'Sluice ESMTP',
    key: policy.tls.key,
    cert: policy.tls.cert,
    disabledCommands: ['AUTH'],
    // classifyRecipient is the one judge of RCPT syntax (its refusal carries 5.7.1 and the reason); strict parsing in
    // smtp-server would refuse `u@domain.` (a trailing dot, which we normalise) with a bare 501 first.
    lenientAddressParsing: true,
    authOptional: true,
    // RFC 1870: advertised as `SIZE <n>`; a larger SIZE= at MAIL gets smtp-server's 552; an undeclared oversize is
    // refused by our guard after the final dot (rejectOversized stays off so the reply carries 5.3.4).
    size: maxBytes,
    // Reverse DNS would block the greeting on an uncontrolled resolver; the Received field records the IP literal.
    disableReverseLookup: true,
    socketTimeout: policy.idleTimeoutMs ?? MX_DEFAULTS.idleTimeoutMs,
    closeTimeout: policy.closeTimeoutMs ?? MX_DEFAULTS.closeTimeoutMs,

    onConnect(session, callback) {
      const ip = session.remoteAddress;
      const fromIp = perIp.get(ip) ?? 0;
      // 421: service not available, try later (RFC 5321 §3.8); 4.7.0 as Postfix uses for connection limits.
      if (counted.size >= limits.maxConnections) {
        return callback(new SmtpReply(421, '4.7.0', `${policy.hostname} Error: too many connections, try again later`));
      }
      // Loopback is exempt from the per-IP cap (still under the global one), as Postfix exempts $mynetworks by
      // default (smtpd_client_event_limit_exceptions): local filters and health checks share one address.
      if (fromIp >= limits.maxConnectionsPerIp && !(policy.perIpCapExempt ?? isLoopback)(ip)) {
        return callback(new SmtpReply(421, '4.7.0', `${policy.hostname} Error: too many connections from ${ip}`));
      }
      counted.set(session.id, ip);
      perIp.set(ip, fromIp + 1);
      callback();
    },

    onClose(session) {
      const ip = counted.get(session.id);
      if (ip === undefined) return;
      counted.delete(session.id);
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left > 0) perIp.set(ip, left);
      else perIp.delete(ip);
    },

    onMailFrom(address, session, callback) {
      // RFC 6531 §3.5: a UTF-8 reverse-path needs SMTPUTF8 on this MAIL command. smtp-server accepts it without.
      if (NON_ASCII.test(address.address) && !session.envelope.smtpUtf8) return callback(needsSmtpUtf8());
      callback();
    },

    onRcptTo(address, session, callback) {
      try {
        const rcpts = session.envelope.rcptTo;
        const repeat = rcpts.some((r) => r.address.toLowerCase() === address.address.toLowerCase());
        // RFC 5321 §4.5.3.1.10: 452 for too many recipients; the client sends the rest in another transaction.
        if (!repeat && rcpts.length >= limits.maxRecipients) {
          return callback(new SmtpReply(452, '4.5.3', 'Error: too many recipients'));
        }
        const decision = classifyRecipient(address.address, session.envelope.smtpUtf8 === true, policy.findServedDomain);
        if (!decision.ok) {
          log.debug({ sessionId: session.id, code: decision.reply.responseCode }, 'recipient refused');
          return callback(decision.reply);
        }
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const refused = policy.checkRecipient?.({ mailFrom, clientIp: session.remoteAddress, rcpt: decision.address });
        if (refused) return callback(new SmtpReply(refused.code, refused.status, refused.message));
        normalised.set(address, decision.address);
        callback();
      } catch (err) {
        log.error({ sessionId: session.id, err }, 'rcpt check failed');
        callback(toSmtpReply(err));
      }
    },

    onData(stream, session, callback) {
      let answered = false;
      const answer = (err: SmtpReply | null, message?: string) => {
        if (answered) return;
        answered = true;
        callback(err, message);
      };
      const run = async () => {
        const { verdict, raw } = await readGuarded(stream, { maxBytes });
        const refused = dataGuardReply(verdict, maxBytes);
        if (refused) {
          log.info({ sessionId: session.id, verdict }, 'message refused by data guard');
          return answer(refused);
        }
        // RFC 5321 §6.3: a message that has passed through too many hosts is looping; 5.4.6 routing loop detected.
        const hops = countReceived(raw);
        if (hops > limits.maxHops) {
          log.info({ sessionId: session.id, hops }, 'message refused: too many hops');
          return answer(new SmtpReply(554, '5.4.6', `Too many hops (${hops} Received header fields): mail forwarding loop`));
        }
        const rcptTo = session.envelope.rcptTo.map((r) => normalised.get(r) ?? r.address);
        const cipher = session.secure && session.tlsOptions ? session.tlsOptions : undefined;
        const received = receivedHeader({
          hostname: policy.hostname,
          helo: session.hostNameAppearsAs || '',
          clientIp: session.remoteAddress,
          tls: cipher ? { version: cipher.version, cipher: cipher.name } : undefined,
          protocol: protocolOf(session),
          id: `${session.id}.${session.transaction}`,
          rcpt: rcptTo.length === 1 ? rcptTo[0] : undefined,
          date: now(),
        });
        if (!policy.onMessage) {
          // Nothing can take the message yet: temporary, so the sender keeps it and retries (never a silent 250).
          return answer(new SmtpReply(451, '4.3.2', 'Inbound delivery is not available yet, try again later'));
        }
        const reply = await policy.onMessage({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo,
          clientIp: session.remoteAddress,
          helo: session.hostNameAppearsAs || '',
          tls: session.secure,
          raw: Buffer.concat([Buffer.from(received, 'utf8'), raw]),
        });
        const r = replyToCallback(reply);
        answer(r.err, r.message);
      };
      // A stream that fails or closes early means the client left mid-DATA: onMessage was not called, and the
      // 451 goes nowhere. An error from onMessage is temporary (invariant 3).
      run().catch((err: unknown) => {
        if (!(err instanceof SmtpReply)) log.warn({ sessionId: session.id, err }, 'data stage failed');
        answer(toSmtpReply(err));
      });
    },
  };
}
