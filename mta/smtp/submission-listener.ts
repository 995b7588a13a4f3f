// Owns the submission listener's SMTP session: AUTH after TLS with failure throttling, sender authorization, limits.
import pino, { type Logger } from 'pino';
import type { SMTPServerAddress, SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import type { LockdownVerdict } from '../../filters/lockdown.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { ScratchArea } from '../../storage/scratch.js';
import type { BufferBudget } from '../buffer-budget.js';
import { contentOf, type MessageContent } from '../message-content.js';
import { createAuthThrottle, type AuthThrottle } from './auth-throttle.js';
import { createConnectionCaps, isLoopback } from './connection-caps.js';
import { REPLY, type SmtpReply } from './replies.js';
import { checkMailbox, domainOf, senderNeedsSmtpUtf8 } from './address.js';
import { defaultScratch, logRcptRefused, MIN_DATA_RATE, receivedFor, runDataStage, STRUCTURE_LIMITS } from './session.js';
import { answer, toSmtpServerError, wireText } from './smtp-server-reply.js';
import type { TlsPair } from './tls.js';

/** Defaults of the optional limits in SubmissionPolicy. */
export const SUBMISSION_DEFAULTS = Object.freeze({
  maxMessageBytes: MAX_MESSAGE_BYTES,
  maxRecipients: 100,
  maxConnectionsPerIp: 50,
  maxConnections: 1000,
  idleTimeoutMs: 300_000,
  closeTimeoutMs: 30_000,
  authFailureDelayMs: 1000,
});

/** What the submission listener hands over at the end of DATA. */
export interface SubmittedMessage {
  /** The authenticated (sub-)account and the user name it logged in with. */
  account: AccountRow;
  username: string;
  /** Envelope sender ('' for the null sender) and recipients as given. */
  mailFrom: string;
  rcptTo: string[];
  clientIp: string;
  /** EHLO name, or the client's reverse name when it gave none. */
  clientName: string;
  /** Our Received field for this hop (RFC 5321 §4.4), CRLF-terminated; prepended above everything else. */
  trace?: string;
  /**
   * The message as received (CRLF only: bare CR/LF were refused by the data guard), without `trace`. Readable until
   * the promise `onMessage` returned settles: then its scratch is discarded.
   */
  content: MessageContent;
}

export interface SubmissionPolicy {
  hostname: string;
  tls: TlsPair;
  /** The live account a handle + SMTP password authenticates, or undefined (storage accounts.authenticateSmtp). */
  authenticate: (username: string, password: string) => Promise<AccountRow | undefined>;
  /** Implicit TLS (port 465 style, RFC 8314 §3.3) rather than STARTTLS. */
  secure?: boolean;
  /**
   * `smtp.submission.allow_insecure_loopback_auth`: a client on 127.0.0.0/8 or ::1 may AUTH without TLS (for a
   * local app that cannot do STARTTLS). Everyone else must use TLS first. Default false.
   */
  allowInsecureLoopbackAuth?: boolean;
  /**
   * `smtp.submission.max_message_bytes`: SIZE (RFC 1870) and the DATA cap (552 5.3.4). This, the structure limits
   * and maxConnectionsPerIp are read per message or session, so a reload that sets them on this object applies to
   * the next one (the listener's advertised SIZE is set with SmtpListener.update).
   */
  maxMessageBytes?: number;
  /** Recipients per message (452 4.5.3 beyond; default 100, RFC 5321 §4.5.3.1.8). */
  maxRecipients?: number;
  /** `smtp.max_header_bytes`: largest header section of the message or of a MIME part (552 5.3.4 beyond). */
  maxHeaderBytes?: number;
  /** `smtp.max_mime_depth`: deepest MIME nesting (554 5.6.0 beyond). */
  maxMimeDepth?: number;
  /** `smtp.submission.max_connections_per_ip`: concurrent sessions from one address (421 4.7.0 beyond; default 50). */
  maxConnectionsPerIp?: number;
  /** Concurrent sessions in all on this listener (default 1000). */
  maxConnections?: number;
  /** Idle time allowed while the client owes us a command or data (default 300 s: RFC 5321 §4.5.3.2.7). */
  idleTimeoutMs?: number;
  /** Grace for open sessions once the listener closes (default 30 s). */
  closeTimeoutMs?: number;
  /**
   * Domain Lockdown (mta/outbound/lockdown-check.ts) for the envelope sender's domain at MAIL FROM. Absent: no check at MAIL
   * (the From header is still checked by `onMessage`).
   */
  lockdown?: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  /** The submission recipe (mta/outbound/submission.ts runSubmission); absent → 451 (nothing accepted). */
  onMessage?: (msg: SubmittedMessage) => Promise<SmtpReply>;
  /**
   * Where DATA is kept while the message is handled (memory up to a bound, then a private file in data_dir/tmp).
   * Default: DEFAULT_SCRATCH (the OS temp directory), for listeners started without a data_dir (tests).
   */
  scratch?: ScratchArea;
  /** `smtp.max_buffered_bytes`: each DATA reserves its working memory here or is answered `452 4.3.1`. */
  budget?: BufferBudget | undefined;
  /** `queue.min_free_bytes`: false when the spool's disk has too little room; MAIL FROM is answered `452 4.3.1`. */
  hasRoom?: () => Promise<boolean>;
  now?: () => number;
  logger?: Logger;
  /** Shared AUTH failure counters (mta/smtp/auth-throttle.ts), so the STARTTLS and implicit-TLS listeners count together. */
  authThrottle?: AuthThrottle;
  /** `smtp.submission.auth_failure_delay_ms`: pause before each 535 (default 1000; 0 answers at once). */
  authFailureDelayMs?: number;
}

/**
 * Checks one RCPT address of an authenticated session with `checkMailbox` ("%" and "!" allowed: we route by MX,
 * never on them). Returns the normalised address or the refusal: `553 5.1.3` bad destination address syntax
 * (RFC 3463; address literals and dotless domains included), `553 5.6.7` for unicode without SMTPUTF8.
 */
export function classifySubmissionRecipient(rcpt: string, smtpUtf8: boolean): { ok: true; address: string } | { ok: false; reply: SmtpReply } {
  const mailbox = checkMailbox(rcpt, { smtpUtf8, allowRoutingChars: true });
  if (mailbox.ok) return { ok: true, address: `${mailbox.local}@${mailbox.domain}` };
  return { ok: false, reply: mailbox.reason === 'utf8' ? REPLY.needsSmtpUtf8 : REPLY.badDestination(rcpt) };
}

/**
 * smtp-server options for submission (one set per listener: the connection counts are per listener).
 *
 * - TLS first (RFC 8314 §3; reliability A10): on a plaintext session AUTH is neither advertised in EHLO nor
 *   accepted (disabled for the session until STARTTLS completes; smtp-server then answers an AUTH with 500), and
 *   MAIL answers `530 5.7.0 Must issue a STARTTLS command first` (RFC 3207 §4). With `allowInsecureLoopbackAuth`
 *   a loopback client may AUTH in plaintext.
 * - AUTH PLAIN/LOGIN: bad credentials (unknown handle, wrong, disabled or deleted password, suspended sub-account)
 *   answer `535 5.7.8` (RFC 4954 §6), each after `authFailureDelayMs`. Failures are counted per client network (IPv4
 *   address, IPv6 /64) and per (network, user name) (mta/smtp/auth-throttle.ts AUTH_LIMITS); past either limit an
 *   AUTH from that network (for that name, or at all) gets `421 4.7.0`, one log line, and the connection is closed
 *   — never the correct password of the same user from another network. Credentials that are not UTF-8: `501
 *   5.5.2` (mta/smtp/smtp-server-seam.ts). Clock injected.
 * - MAIL before AUTH: `530 5.7.0 Authentication required` (RFC 4954 §6). MAIL FROM domain must pass Domain
 *   Lockdown for the authenticated account: `550 5.7.1`; a DNS failure of the look-up: `451 4.4.3` (unknown means
 *   temporary). The null sender is allowed (the From header is still checked at the end of DATA).
 * - RCPT: `452 4.5.3` past the cap (RFC 5321 §4.5.3.1.10), `553 5.1.3` for an unusable address.
 * - Connection caps: `421 4.7.0` at connect; idle timeout closes with smtp-server's `421`.
 * - DATA: SIZE advertised and enforced (`552 5.3.4`), every bare CR or LF refused (`550 5.6.0`), a header section
 *   over `maxHeaderBytes` refused (`552 5.3.4`), MIME nested deeper than `maxMimeDepth` (`554 5.6.0`); a session that
 *   ends mid-DATA never reaches `onMessage`, so nothing is queued. A Received field (RFC 5321 §4.4) is handed on.
 */
export function submissionOptions(policy: SubmissionPolicy): SMTPServerOptions {
  const maxRcpt = policy.maxRecipients ?? SUBMISSION_DEFAULTS.maxRecipients;
  // Read at each DATA (and each connect, for the per-address cap), not once: a reload (SIGHUP) that changes them on
  // `policy` applies to the next message or session.
  const dataLimits = () => ({
    maxBytes: policy.maxMessageBytes ?? SUBMISSION_DEFAULTS.maxMessageBytes,
    maxHeaderBytes: policy.maxHeaderBytes ?? STRUCTURE_LIMITS.maxHeaderBytes,
    maxMimeDepth: policy.maxMimeDepth ?? STRUCTURE_LIMITS.maxMimeDepth,
  });
  const now = policy.now ?? Date.now;
  const throttle = policy.authThrottle ?? createAuthThrottle({ now });
  const log = (policy.logger ?? pino({ level: 'silent' })).child({ component: 'submission' });
  const caps = createConnectionCaps({
    hostname: policy.hostname,
    get maxPerIp() {
      return policy.maxConnectionsPerIp ?? SUBMISSION_DEFAULTS.maxConnectionsPerIp;
    },
    maxTotal: policy.maxConnections ?? SUBMISSION_DEFAULTS.maxConnections,
  });
  // May this session AUTH now? Over TLS always; in plaintext only from loopback when the operator allowed it.
  const authAllowed = (session: SMTPServerSession) =>
    session.secure || (policy.allowInsecureLoopbackAuth === true && isLoopback(session.remoteAddress));
  // The account each authenticated session logged in as, by session id (dropped at close).
  const sessions = new Map<string, AccountRow>();
  // The normalised form of each accepted RCPT, keyed by the object smtp-server keeps in envelope.rcptTo.
  const normalised = new WeakMap<SMTPServerAddress, string>();

  return {
    name: policy.hostname,
    banner: 'Sluice ESMTP submission',
    secure: policy.secure ?? false,
    key: policy.tls.key,
    cert: policy.tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // Per-session gating (onConnect/onSecure) does the real work; this only lets smtp-server run AUTH in plaintext
    // for the loopback sessions we left AUTH enabled on.
    allowInsecureAuth: policy.allowInsecureLoopbackAuth === true,
    authOptional: false,
    // smtp-server's own 530 to a command before AUTH: the same text as ours.
    authRequiredMessage: wireText(REPLY.authRequired),
    size: dataLimits().maxBytes,
    // Reverse DNS would block the greeting on an uncontrolled resolver; upstream_hostname is the EHLO name.
    disableReverseLookup: true,
    socketTimeout: policy.idleTimeoutMs ?? SUBMISSION_DEFAULTS.idleTimeoutMs,
    closeTimeout: policy.closeTimeoutMs ?? SUBMISSION_DEFAULTS.closeTimeoutMs,

    onConnect(session, callback) {
      const refused = caps.admit(session.id, session.remoteAddress);
      if (refused) {
        log.info({ sessionId: session.id, ip: session.remoteAddress }, 'connection refused: cap');
        return answer(callback, refused);
      }
      // Not advertised, not accepted: credentials never cross the wire in the clear (RFC 8314 §3).
      if (!authAllowed(session)) session.disabledCommands = ['AUTH'];
      answer(callback);
    },

    onSecure(_socket, session, callback) {
      // TLS is up (STARTTLS or implicit): AUTH becomes available (back to the server-wide list).
      session.disabledCommands = undefined;
      callback();
    },

    onClose(session) {
      caps.release(session.id);
      sessions.delete(session.id);
    },

    async onAuth(auth, session, callback) {
      const refuse = (reply: SmtpReply) => callback(toSmtpServerError(reply));
      try {
        if (!authAllowed(session)) return refuse(REPLY.mustStartTls);
        const user = (auth.username ?? '').toLowerCase();
        const ip = session.remoteAddress;
        const refused = await throttle.check(ip, user);
        if (refused) {
          // One line per refusal: which counter (the network's, or this name's from it) and how many failures.
          log.warn({ sessionId: session.id, ip, user, ...refused }, 'auth refused: too many failures from this address');
          // smtp-server closes the connection after any 421.
          return refuse(REPLY.tooManyAuthFailures);
        }
        const account = auth.username && auth.password ? await policy.authenticate(auth.username, auth.password) : undefined;
        // RFC 4954 §6: 535 5.7.8 for bad credentials; a suspended sub-account is refused the same way.
        if (!account || !account.enabled) {
          await throttle.failed(ip, user);
          // warn: a run of these is someone guessing passwords (the throttle above closes them out).
          log.warn({ sessionId: session.id, ip, user }, 'auth failed');
          // Slows guessing on one connection (Postfix smtpd_error_sleep_time); the connection cap bounds the pauses.
          const delay = policy.authFailureDelayMs ?? SUBMISSION_DEFAULTS.authFailureDelayMs;
          if (delay <= 0) return refuse(REPLY.authInvalid);
          setTimeout(() => refuse(REPLY.authInvalid), delay).unref();
          return;
        }
        await throttle.succeeded(ip, user);
        sessions.set(session.id, account);
        callback(null, { user: account.handle });
      } catch (err) {
        log.error({ sessionId: session.id, err }, 'auth check failed');
        refuse(REPLY.authTempfail);
      }
    },

    onMailFrom(address, session, callback) {
      const account = sessions.get(session.id);
      if (!account) {
        return answer(callback, authAllowed(session) ? REPLY.authRequired : REPLY.mustStartTls);
      }
      const addr = address.address;
      if (senderNeedsSmtpUtf8(addr, session.envelope.smtpUtf8 === true)) return answer(callback, REPLY.needsSmtpUtf8);
      const domain = domainOf(addr);
      // RFC 3463 4.3.1 before anything is received when the spool's disk is low (Postfix queue_minfree), then lockdown.
      (policy.hasRoom ?? (async () => true))()
        .then(async (room) => {
          if (!room) return answer(callback, REPLY.insufficientStorage);
          if (addr === '' || !policy.lockdown) return answer(callback);
          const verdict = await policy.lockdown(domain, account);
          if (verdict.action === 'pass') return answer(callback);
          log.info({ sessionId: session.id, account: account.handle, domain, reason: verdict.reason }, 'sender refused');
          const dnsError = verdict.reason === 'lockdown-dns-error';
          answer(callback, dnsError ? REPLY.senderDomainUnverifiable(domain) : REPLY.senderDomainNotAuthorized(domain));
        })
        .catch((err: unknown) => {
          log.error({ sessionId: session.id, err }, 'lockdown check failed');
          answer(callback, REPLY.tempfail);
        });
    },

    onRcptTo(address, session, callback) {
      const rcpts = session.envelope.rcptTo;
      const repeat = rcpts.some((r) => r.address.toLowerCase() === address.address.toLowerCase());
      // RFC 5321 §4.5.3.1.10: 452 for too many recipients; the client sends the rest in another transaction.
      const refuse = (reply: SmtpReply, reason: string) => {
        logRcptRefused(log, session, address.address, reply, reason);
        answer(callback, reply);
      };
      if (!repeat && rcpts.length >= maxRcpt) return refuse(REPLY.tooManyRecipients, 'too-many-recipients');
      const decision = classifySubmissionRecipient(address.address, session.envelope.smtpUtf8 === true);
      if (!decision.ok) return refuse(decision.reply, decision.reply === REPLY.needsSmtpUtf8 ? 'needs-smtputf8' : 'bad-address');
      normalised.set(address, decision.address);
      answer(callback);
    },

    onData(stream, session, callback) {
      const minRate = { ...MIN_DATA_RATE, now };
      const limitsNow = dataLimits();
      const stage = { ...limitsNow, minRate, scratch: policy.scratch ?? defaultScratch(), budget: policy.budget, log };
      runDataStage(stream, session, callback, stage, async (data) => {
        const account = sessions.get(session.id);
        if (!account) return REPLY.authRequired;
        if (!policy.onMessage) return REPLY.submissionUnavailable;
        // Recipients are unique by construction; a repeat RCPT leaves two entries in smtp-server's list.
        const rcptTo = [...new Set(session.envelope.rcptTo.map((r) => normalised.get(r) ?? r.address))];
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const reply = await policy.onMessage({
          account,
          username: account.handle,
          mailFrom,
          rcptTo,
          clientIp: session.remoteAddress,
          clientName: session.hostNameAppearsAs || '',
          trace: receivedFor(session, policy.hostname, rcptTo, now()),
          content: await contentOf([{ scratch: data }], limitsNow.maxHeaderBytes),
        });
        // One line per submitted message, accepted or not (the 250 carries the queue id: `queued as <id>`).
        log.info(
          { sessionId: session.id, ip: session.remoteAddress, account: account.handle, mailFrom, rcptTo, size: data.size, reply: `${reply.code} ${reply.status} ${reply.message}` },
          reply.code < 300 ? 'message submitted' : 'message refused',
        );
        return reply;
      });
    },
  };
}
