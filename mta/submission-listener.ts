// Owns the submission listener's SMTP session: AUTH after TLS with failure limits, sender authorization, limits.
import pino, { type Logger } from 'pino';
import type { SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import type { AccountRow } from '../storage/accounts.js';
import { dataGuardReply, readGuarded } from './data-guard.js';
import { SmtpReply, toSmtpReply } from './smtp-reply.js';
import type { SmtpDecision, SubmittedMessage } from './submission.js';
import type { TlsPair } from './tls.js';

/** Failed AUTH attempts allowed per client address and per user name within AUTH_FAILURE_WINDOW_MS. */
export const AUTH_FAILURE_LIMIT = 5;
export const AUTH_FAILURE_WINDOW_MS = 15 * 60_000;

export interface SubmissionPolicy {
  hostname: string;
  tls: TlsPair;
  /** The live account a handle + SMTP password authenticates, or undefined. */
  authenticate: (username: string, password: string) => AccountRow | undefined;
  /** Implicit TLS (port 465 style) rather than STARTTLS. */
  secure?: boolean;
  /** `smtp.submission.max_message_bytes`: SIZE (RFC 1870) and the DATA cap (552 5.3.4). */
  maxMessageBytes?: number;
  /** Recipients per message (452 4.5.3 beyond; default 100, RFC 5321 §4.5.3.1.8). */
  maxRecipients?: number;
  /** Domain Lockdown for the envelope sender's domain at MAIL FROM: true when the account may use it. */
  senderAllowed?: (account: AccountRow, domain: string) => Promise<boolean>;
  /** The submission recipe (mta/submission.ts runSubmission); absent → 451 (nothing accepted). */
  onMessage?: (msg: SubmittedMessage) => Promise<SmtpDecision>;
  now?: () => number;
  logger?: Logger;
  /** Shared failure counters, so the STARTTLS and implicit-TLS listeners count together. */
  authFailures?: AuthFailureCounter;
}

/** Counts failed AUTH attempts per key (client IP, user name) in a sliding window; clock injected. */
export function createAuthFailureCounter(now: () => number = Date.now) {
  const failures = new Map<string, number[]>();
  const recent = (key: string) => (failures.get(key) ?? []).filter((at) => at > now() - AUTH_FAILURE_WINDOW_MS);
  return {
    /** True once `key` has used up its failures in the window. */
    blocked(key: string): boolean {
      return recent(key).length >= AUTH_FAILURE_LIMIT;
    },
    record(key: string): void {
      const list = recent(key);
      list.push(now());
      failures.set(key, list);
      if (failures.size > 100_000) failures.delete(failures.keys().next().value as string); // bounded memory
    },
  };
}
export type AuthFailureCounter = ReturnType<typeof createAuthFailureCounter>;


/**
 * smtp-server options for submission. allowInsecureAuth=false keeps AUTH hidden and refused until STARTTLS
 * (RFC 8314 §3; reliability A10); authOptional=false answers 530 to MAIL before AUTH. Failed AUTH answers
 * `535 5.7.8`; after AUTH_FAILURE_LIMIT failures in AUTH_FAILURE_WINDOW_MS from one address or for one user name
 * every AUTH gets `421 4.7.0` and the connection is closed (Postfix anvil / smtpd_client_auth_rate_limit spirit).
 */
export function submissionOptions(policy: SubmissionPolicy): SMTPServerOptions {
  const maxBytes = policy.maxMessageBytes ?? 31_457_280;
  const maxRcpt = policy.maxRecipients ?? 100;
  const failures = policy.authFailures ?? createAuthFailureCounter(policy.now);
  const log = (policy.logger ?? pino({ level: 'silent' })).child({ component: 'submission' });
  // The account each authenticated session logged in as, by session id (dropped at close).
  const sessions = new Map<string, AccountRow>();
  const accounts = {
    get: (session: SMTPServerSession) => sessions.get(session.id),
    set: (session: SMTPServerSession, account: AccountRow) => sessions.set(session.id, account),
  };
  return {
    name: policy.hostname,
    banner: 'Sluice ESMTP submission',
    secure: policy.secure ?? false,
    key: policy.tls.key,
    cert: policy.tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: false,
    authOptional: false,
    size: maxBytes,
    disableReverseLookup: true,
    onAuth(auth, session, callback) {
      try {
        const user = (auth.username ?? '').toLowerCase();
        const ipKey = `ip:${session.remoteAddress}`;
        const userKey = `user:${user}`;
        if (failures.blocked(ipKey) || failures.blocked(userKey)) {
          log.warn({ ip: session.remoteAddress, user }, 'AUTH refused: too many failures');
          return callback(new SmtpReply(421, '4.7.0', 'Too many failed authentication attempts, try again later'));
        }
        const account = auth.username && auth.password ? policy.authenticate(auth.username, auth.password) : undefined;
        // RFC 4954 §6: 535 5.7.8 for bad credentials; a suspended sub-account is refused the same way.
        if (!account || account.enabled !== 1) {
          failures.record(ipKey);
          failures.record(userKey);
          return callback(new SmtpReply(535, '5.7.8', 'Authentication credentials invalid'));
        }
        accounts.set(session, account);
        callback(null, { user: account.handle });
      } catch (err) {
        callback(toSmtpReply(err));
      }
    },
    onClose(session) {
      sessions.delete(session.id);
    },
    onMailFrom(address, session, callback) {
      const account = accounts.get(session);
      if (!account) return callback(new SmtpReply(530, '5.7.0', 'Authentication required'));
      const addr = address.address;
      if (addr === '' || !policy.senderAllowed) return callback();
      const domain = addr.slice(addr.lastIndexOf('@') + 1).toLowerCase();
      policy
        .senderAllowed(account, domain)
        .then((ok) => callback(ok ? null : new SmtpReply(550, '5.7.1', `Sender domain ${domain} is not authorized for this account`)))
        .catch((err: unknown) => callback(toSmtpReply(err)));
    },
    onRcptTo(_address, session, callback) {
      if (session.envelope.rcptTo.length >= maxRcpt) return callback(new SmtpReply(452, '4.5.3', 'Too many recipients'));
      callback();
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
        if (refused) return answer(refused);
        const account = accounts.get(session);
        if (!account) return answer(new SmtpReply(530, '5.7.0', 'Authentication required'));
        if (!policy.onMessage) return answer(new SmtpReply(451, '4.3.2', 'Submission is not available, try again later'));
        const d = await policy.onMessage({
          account,
          username: session.user ?? account.handle,
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          clientIp: session.remoteAddress,
          clientName: session.hostNameAppearsAs || session.clientHostname || '',
          raw,
        });
        if (d.code >= 200 && d.code < 300) return answer(null, `${d.status} ${d.message}`);
        answer(new SmtpReply(d.code >= 400 && d.code < 600 ? d.code : 451, d.status, d.message));
      };
      // A stream that ends early (client gone mid-DATA) rejects: onMessage never ran, nothing was queued.
      run().catch((err: unknown) => {
        if (!(err instanceof SmtpReply)) log.warn({ err }, 'submission DATA failed');
        answer(toSmtpReply(err));
      });
    },
  };
}
