// Owns the MX listener's SMTP session: who may connect, which recipients are accepted (served domains only, never
// a relay), what DATA must look like (size, bare CR/LF, hop count), the Received field, and handing the message on.
import pino, { type Logger } from 'pino';
import type { SMTPServerAddress, SMTPServerOptions } from 'smtp-server';
import type { ScratchArea } from '../../storage/scratch.js';
import type { BufferBudget } from '../buffer-budget.js';
import { contentOf, type MessageContent } from '../message-content.js';
import { createConnectionCaps, isLoopback } from './connection-caps.js';
import { REPLY, type SmtpReply } from './replies.js';
import { checkMailbox, senderNeedsSmtpUtf8 } from './address.js';
import { defaultScratch, logRcptRefused, MIN_DATA_RATE, receivedFor, runDataStage, STRUCTURE_LIMITS } from './session.js';
import { answer } from './smtp-server-reply.js';
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
  /**
   * The message with our Received field prepended; CRLF line ends only (bare CR/LF were refused). Readable (and its
   * sample valid) until the promise `onMessage` returned settles: then its scratch is discarded.
   */
  content: MessageContent;
}

/** The served domain for a name (lower-case A-label, no trailing dot), or undefined: relay denied. */
export type ServedDomainLookup<S extends { id: number } = { id: number }> = (name: string) => Promise<S | undefined>;

/** `S`: the served domain's row as the lookup returns it, handed on to `checkRecipient`. */
export interface MxPolicy<S extends { id: number } = { id: number }> {
  /** `smtp.hostname`: greeting, Received `by`. */
  hostname: string;
  tls: TlsPair;
  /** The inbound domains port's `findServedDomain`: a provisioned domain or an alias of one. */
  findServedDomain: ServedDomainLookup<S>;
  /**
   * `smtp.mx.max_message_bytes`: advertised with SIZE (RFC 1870) and enforced at MAIL and after DATA. This and the
   * two structure limits are read at each DATA, so a reload that sets them on this object applies to the next
   * message (the listener's advertised SIZE is set with SmtpListener.update).
   */
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
  /** `smtp.max_header_bytes`: largest header section of the message or of a MIME part (552 5.3.4 beyond). */
  maxHeaderBytes?: number;
  /** `smtp.max_mime_depth`: deepest MIME nesting (554 5.6.0 beyond). */
  maxMimeDepth?: number;
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
  onMessage?: (msg: MxMessage) => Promise<SmtpReply>;
  /**
   * Optional RCPT-time check after the relay decision (the inbound pipeline's `checkRecipient`: lists, DNS lists,
   * greylisting, each refused at the earliest stage that knows). A reply refuses (or defers) that recipient; a
   * rejected promise answers 451 4.3.0. `served` is the row the relay decision just read (not read again).
   */
  checkRecipient?: (q: { mailFrom: string; clientIp: string; rcpt: string; served: S }) => Promise<SmtpReply | undefined>;
  /**
   * Told each recipient refused or deferred at RCPT, with the listener's reason and the served domain when the
   * refusal came after the relay decision (the inbound log: mta/inbound/inbound-log.ts). The reply waits for it, so
   * the refusal is on record when the client hears it; it must not reject (the reply stands either way).
   */
  onRcptRefused?: (e: { mailFrom: string; clientIp: string; helo: string; rcpt: string; reply: SmtpReply; reason: string; served?: S }) => Promise<void>;
  /**
   * Told of a message refused at DATA before any policy saw it (the data guard: size, header section, bare CR/LF, MIME
   * depth; a routing loop), with each accepted recipient and its served domain; as onRcptRefused, the reply waits for
   * it and it must not reject.
   */
  onDataRefused?: (e: { mailFrom: string; clientIp: string; helo: string; rcpts: { rcpt: string; served?: S }[]; reply: SmtpReply; reason: string }) => Promise<void>;
  /**
   * Mail that comes back (mta/queue/feedback.ts): a recipient it calls ours — a verified return path, the feedback
   * address — is accepted without a served domain or the RCPT checks, in a transaction of its own, and its DATA goes
   * to `take` instead of `onMessage`; a reply it gives for a recipient refuses it.
   */
  feedback?: {
    recipient(address: string): Promise<{ ours: boolean; reply?: SmtpReply }>;
    take(msg: { rcptTo: readonly string[]; content: MessageContent; clientIp: string }): Promise<SmtpReply>;
  };
  /**
   * Where DATA is kept while the message is handled (memory up to a bound, then a private file in data_dir/tmp).
   * Default: DEFAULT_SCRATCH (the OS temp directory), for listeners started without a data_dir (tests).
   */
  scratch?: ScratchArea;
  /** `smtp.max_buffered_bytes`: each DATA reserves its working memory here or is answered `452 4.3.1`. */
  budget?: BufferBudget | undefined;
  /**
   * `queue.min_free_bytes` (Postfix queue_minfree): false when the spool's disk has too little room left; MAIL FROM
   * is then answered `452 4.3.1` before anything is received.
   */
  hasRoom?: () => Promise<boolean>;
  /** Clock for the Received date and the minimum DATA rate. */
  now?: () => number;
  logger?: Logger;
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

export type RecipientDecision<S extends { id: number } = { id: number }> = { ok: true; address: string; domainId: number; served: S } | { ok: false; reply: SmtpReply };

/**
 * Decides one RCPT address before any filter runs (ARCHITECTURE invariant 4). Accepted only when the address passes
 * `checkMailbox` without routing characters ("%" and "!": old MTAs route on them, so a downstream could relay on
 * our behalf; quoted local parts are refused for the same reason) and its domain is a served domain or alias.
 * Everything else (foreign domains, IP literals, quoted or routing local parts, no domain at all) is `550 5.7.1`
 * relay denied, whatever the sender or client. smtp-server has already stripped a source route (RFC 5321 App. C),
 * so the final address is what we judge. A non-ASCII local part without SMTPUTF8 is `553 5.6.7`. `address` is the
 * normalised form handed on. The listener runs smtp-server with lenientAddressParsing, so trailing dots and odd
 * syntax reach this judgement instead of a bare `501` from the library.
 */
export async function classifyRecipient<S extends { id: number }>(rcpt: string, smtpUtf8: boolean, findServedDomain: ServedDomainLookup<S>): Promise<RecipientDecision<S>> {
  const mailbox = checkMailbox(rcpt, { smtpUtf8, allowRoutingChars: false });
  if (!mailbox.ok) return { ok: false, reply: mailbox.reason === 'utf8' ? REPLY.needsSmtpUtf8 : REPLY.relayDenied(rcpt) };
  const served = await findServedDomain(mailbox.domain);
  if (!served) return { ok: false, reply: REPLY.relayDenied(rcpt) };
  return { ok: true, address: `${mailbox.local}@${mailbox.domain}`, domainId: served.id, served };
}

/**
 * Received fields in the header section of `raw` (CRLF line ends), for loop detection (RFC 5321 §6.3); `raw` may be
 * the message's sample (its whole header section and the start of its body).
 */
export function countReceived(raw: Buffer): number {
  if (raw.length >= 2 && raw[0] === 0x0d && raw[1] === 0x0a) return 0;
  const end = raw.indexOf('\r\n\r\n');
  const header = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  let n = 0;
  for (const line of header.split('\r\n')) if (/^received[ \t]*:/i.test(line)) n++;
  return n;
}

/**
 * smtp-server options for the MX: STARTTLS offered, no AUTH, SIZE advertised, SMTPUTF8, 8BITMIME and
 * ENHANCEDSTATUSCODES advertised (our replies carry their codes in the text; the listener adapter adds one to the
 * library's own replies, mta/smtp/listener.ts).
 * Connection caps answer `421 4.7.0` at connect; RCPT: `452 4.5.3` past the cap, then `classifyRecipient`;
 * DATA: the guard (552 5.3.4 for size or header section, 550 5.6.0 bare CR/LF, 554 5.6.0 MIME depth), hop count
 * (554 5.4.6), Received prepended, then `onMessage`.
 * The returned options keep per-listener connection counts: build one per listener.
 */
export function mxOptions<S extends { id: number }>(policy: MxPolicy<S>): SMTPServerOptions {
  const limits = {
    maxRecipients: policy.maxRecipients ?? MX_DEFAULTS.maxRecipients,
    maxConnectionsPerIp: policy.maxConnectionsPerIp ?? MX_DEFAULTS.maxConnectionsPerIp,
    maxConnections: policy.maxConnections ?? MX_DEFAULTS.maxConnections,
    maxHops: policy.maxHops ?? MX_DEFAULTS.maxHops,
  };
  // Read at each DATA, not once: a reload (SIGHUP) that changes them on `policy` applies to the next message.
  const dataLimits = () => ({
    maxBytes: policy.maxMessageBytes,
    maxHeaderBytes: policy.maxHeaderBytes ?? STRUCTURE_LIMITS.maxHeaderBytes,
    maxMimeDepth: policy.maxMimeDepth ?? STRUCTURE_LIMITS.maxMimeDepth,
  });
  const now = policy.now ?? Date.now;
  const log = (policy.logger ?? pino({ level: 'silent' })).child({ component: 'mx' });
  // Loopback is exempt from the per-IP cap (still under the global one), as Postfix exempts $mynetworks by default
  // (smtpd_client_event_limit_exceptions): local filters and health checks share one address.
  const caps = createConnectionCaps({
    hostname: policy.hostname,
    maxPerIp: limits.maxConnectionsPerIp,
    maxTotal: limits.maxConnections,
    exempt: policy.perIpCapExempt ?? isLoopback,
  });
  // The normalised form of each accepted RCPT, keyed by the object smtp-server keeps in envelope.rcptTo.
  const normalised = new WeakMap<SMTPServerAddress, string>();
  // The served domain each accepted RCPT's relay decision read (a refusal at DATA is logged under its account).
  const servedOf = new WeakMap<SMTPServerAddress, S>();
  /** Accepted RCPTs that are return paths or the feedback address (policy.feedback). */
  const reports = new WeakSet<SMTPServerAddress>();

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
    size: policy.maxMessageBytes,
    // Reverse DNS would block the greeting on an uncontrolled resolver; the Received field records the IP literal.
    disableReverseLookup: true,
    socketTimeout: policy.idleTimeoutMs ?? MX_DEFAULTS.idleTimeoutMs,
    closeTimeout: policy.closeTimeoutMs ?? MX_DEFAULTS.closeTimeoutMs,

    onConnect(session, callback) {
      answer(callback, caps.admit(session.id, session.remoteAddress));
    },

    onClose(session) {
      caps.release(session.id);
    },

    onMailFrom(address, session, callback) {
      const needsUtf8 = senderNeedsSmtpUtf8(address.address, session.envelope.smtpUtf8 === true);
      if (needsUtf8) return answer(callback, REPLY.needsSmtpUtf8);
      if (!policy.hasRoom) return answer(callback);
      // RFC 3463 4.3.1, before anything is received: Postfix's queue_minfree answers MAIL FROM the same way.
      policy.hasRoom().then(
        (room) => answer(callback, room ? undefined : REPLY.insufficientStorage),
        (err: unknown) => {
          log.error({ sessionId: session.id, err }, 'free space check failed');
          answer(callback, REPLY.tempfail);
        },
      );
    },

    async onRcptTo(address, session, callback) {
      try {
        const rcpts = session.envelope.rcptTo;
        const repeat = rcpts.some((r) => r.address.toLowerCase() === address.address.toLowerCase());
        // RFC 5321 §4.5.3.1.10: 452 for too many recipients; the client sends the rest in another transaction.
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const refuse = (reply: SmtpReply, reason: string, served?: S) => {
          logRcptRefused(log, session, address.address, reply, reason);
          const noted = policy.onRcptRefused?.({ mailFrom, clientIp: session.remoteAddress, helo: session.hostNameAppearsAs || '', rcpt: address.address, reply, reason, ...(served ? { served } : {}) });
          if (!noted) return answer(callback, reply);
          noted.catch(() => undefined).finally(() => answer(callback, reply));
        };
        if (!repeat && rcpts.length >= limits.maxRecipients) return refuse(REPLY.tooManyRecipients, 'too-many-recipients');
        const fb = policy.feedback ? await policy.feedback.recipient(address.address) : { ours: false };
        if (fb.reply) return refuse(fb.reply, 'unknown-return-path');
        // A report and mail for a served domain are handled apart: never in one transaction.
        if (!repeat && rcpts.some((r) => reports.has(r) !== fb.ours)) return refuse(REPLY.feedbackApart, 'report-apart');
        if (fb.ours) {
          reports.add(address);
          normalised.set(address, address.address.toLowerCase());
          return answer(callback);
        }
        const decision = await classifyRecipient(address.address, session.envelope.smtpUtf8 === true, policy.findServedDomain);
        if (!decision.ok) return refuse(decision.reply, decision.reply === REPLY.needsSmtpUtf8 ? 'needs-smtputf8' : 'relay-denied');
        const accept = (refused: SmtpReply | undefined) => {
          if (refused) return refuse(refused, refused.code === 450 ? 'greylisted' : refused.code === 554 ? 'dnsbl-refused' : 'list-refused', decision.served);
          normalised.set(address, decision.address);
          servedOf.set(address, decision.served);
          answer(callback);
        };
        Promise.resolve(policy.checkRecipient?.({ mailFrom, clientIp: session.remoteAddress, rcpt: decision.address, served: decision.served })).then(accept, (err: unknown) => {
          log.error({ sessionId: session.id, err }, 'rcpt check failed');
          answer(callback, REPLY.tempfail);
        });
      } catch (err) {
        log.error({ sessionId: session.id, err }, 'rcpt check failed');
        answer(callback, REPLY.tempfail);
      }
    },

    onData(stream, session, callback) {
      const minRate = { ...MIN_DATA_RATE, now };
      const rcptTo = () => session.envelope.rcptTo.map((r) => normalised.get(r) ?? r.address);
      const limitsNow = dataLimits();
      const dataRefused = async (reply: SmtpReply, reason: string) =>
        policy.onDataRefused?.({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', clientIp: session.remoteAddress, helo: session.hostNameAppearsAs || '',
          rcpts: session.envelope.rcptTo.map((r) => ({ rcpt: normalised.get(r) ?? r.address, served: servedOf.get(r) })), reply, reason,
        });
      const stage = { ...limitsNow, minRate, scratch: policy.scratch ?? defaultScratch(), budget: policy.budget, log, onRefused: dataRefused };
      runDataStage(stream, session, callback, stage, async (data) => {
        // Our Received field (RFC 5321 §4.4) goes on top of the client's bytes; the message is read from the scratch.
        const trace = Buffer.from(receivedFor(session, policy.hostname, rcptTo(), now()), 'utf8');
        const content = await contentOf([trace, { scratch: data }], limitsNow.maxHeaderBytes);
        // RFC 5321 §6.3: a message that has passed through too many hosts is looping; 5.4.6 routing loop detected.
        // Our own Received field is at the top and is not one of the hops the client's message made.
        const hops = countReceived(content.sample) - 1;
        if (hops > limits.maxHops) {
          log.info({ sessionId: session.id, hops }, 'message refused: too many hops');
          const reply = REPLY.tooManyHops(hops);
          await dataRefused(reply, 'too-many-hops')?.catch(() => undefined);
          return reply;
        }
        const first = session.envelope.rcptTo[0];
        if (first && reports.has(first) && policy.feedback) {
          return policy.feedback.take({ rcptTo: rcptTo(), content, clientIp: session.remoteAddress });
        }
        if (!policy.onMessage) {
          // Nothing can take the message yet: temporary, so the sender keeps it and retries (never a silent 250).
          return REPLY.inboundUnavailable;
        }
        return policy.onMessage({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: rcptTo(),
          clientIp: session.remoteAddress,
          helo: session.hostNameAppearsAs || '',
          tls: session.secure,
          content,
        });
      });
    },
  };
}
