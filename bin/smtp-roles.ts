// Owns starting the SMTP roles of a process (the MX and the submission listeners) on the wired core, and applying
// a reloaded configuration's limits and a new certificate to them without closing a session.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { runSubmission } from '../mta/outbound/submission.js';
import { startSmtpListener, type SmtpListener } from '../mta/smtp/listener.js';
import { mxOptions, type MxPolicy } from '../mta/smtp/mx-listener.js';
import { createAuthThrottle } from '../mta/smtp/auth-throttle.js';
import type { SessionLimits } from '../mta/smtp/smtp-server-seam.js';
import { submissionOptions, type SubmissionPolicy, type SubmittedMessage } from '../mta/smtp/submission-listener.js';
import type { TlsSource } from '../mta/smtp/tls.js';
import type { AccountRow } from '../storage/ports/accounts.js';
import type { ServedDomainRow } from '../storage/ports/inbound-domains.js';
import { bind } from './listen-error.js';
import type { Core } from './wiring.js';

export interface SmtpRoles {
  /**
   * Sets the limits a reload may change (message size, header size, MIME depth, submission sessions per address)
   * for the next session or message; sessions in progress keep what they were told.
   */
  applyLimits(config: Config): void;
}

export interface SmtpRoleOptions {
  core: Core;
  config: Config;
  tls: TlsSource;
  now: () => number;
  logger: Logger;
  mx: boolean;
  submission: boolean;
  /** Each listener as soon as it is bound, so a failure of the next one can close it. */
  started: (l: SmtpListener) => void;
  /** Bind with SO_REUSEPORT (several serving processes share the ports: mta/smtp/listener.ts). */
  reusePort?: boolean;
}

/** Starts the MX and/or submission listeners; the certificate follows `tls` (each new pair goes to every listener). */
export async function startSmtpRoles(o: SmtpRoleOptions): Promise<SmtpRoles> {
  const { core, config, now, logger } = o;
  const listeners: { listener: SmtpListener; size: (c: Config) => number }[] = [];
  const mxPolicies: MxPolicy<ServedDomainRow>[] = [];
  const submissionPolicies: SubmissionPolicy[] = [];
  const started = (listener: SmtpListener, size: (c: Config) => number) => {
    listeners.push({ listener, size });
    o.started(listener);
  };
  o.tls.onChange((pair) => {
    for (const l of listeners) l.listener.update({ tls: pair });
  });
  // Both listeners: NOOP/RSET/VRFY/HELP since the last message, and the longest session (0: none).
  const deadlineMs = config.smtp.sessionDeadlineMinutes === 0 ? Infinity : config.smtp.sessionDeadlineMinutes * 60_000;
  const sessionLimits: SessionLimits = { junkCommands: config.smtp.junkCommandLimit, deadlineMs, now };

  if (o.mx) {
    // The MX: served domains only, the data guard, then the inbound pipeline.
    const policy: MxPolicy<ServedDomainRow> = {
      hostname: config.smtp.hostname,
      tls: o.tls.current(),
      findServedDomain: core.services.inboundDomains.findServedDomain,
      maxMessageBytes: config.smtp.mx.maxMessageBytes,
      maxHeaderBytes: config.smtp.maxHeaderBytes,
      maxMimeDepth: config.smtp.maxMimeDepth,
      onMessage: (msg) => core.inbound.handle(msg),
      checkRecipient: (q) => core.inbound.checkRecipient(q),
      onRcptRefused: (e) => core.inbound.rcptRefused(e),
      onDataRefused: (e) => core.inbound.dataRefused(e),
      feedback: core.feedback,
      scratch: core.space.scratch,
      budget: core.space.budget,
      hasRoom: core.space.hasRoom,
      now,
      logger,
    };
    mxPolicies.push(policy);
    const { listen, greetDelayMs } = config.smtp.mx;
    started(
      await bind('smtp.mx.listen', listen, () => startSmtpListener('mx', listen, mxOptions(policy), { greetDelayMs, metrics: core.metrics, sessionLimits, reusePort: o.reusePort === true, proxyFrom: config.smtp.proxyProtocolFrom })),
      (c) => c.smtp.mx.maxMessageBytes,
    );
  }

  if (o.submission) {
    // STARTTLS, and implicit TLS when configured: AUTH, lockdown, then the send recipe. One failure counter for both
    // listeners, so switching port does not reset it.
    const base: SubmissionPolicy = {
      hostname: config.smtp.hostname,
      tls: o.tls.current(),
      authenticate: (u: string, p: string) => core.accounts.authenticateSmtp(u, p),
      allowInsecureLoopbackAuth: config.smtp.submission.allowInsecureLoopbackAuth,
      maxMessageBytes: config.smtp.submission.maxMessageBytes,
      maxHeaderBytes: config.smtp.maxHeaderBytes,
      maxMimeDepth: config.smtp.maxMimeDepth,
      maxConnectionsPerIp: config.smtp.submission.maxConnectionsPerIp,
      // Domain Lockdown for the envelope sender at MAIL FROM (the From header is checked by runSubmission).
      lockdown: (domain: string, account: AccountRow) => core.lockdown(domain, account),
      onMessage: (m: SubmittedMessage) => runSubmission(core.sendDeps, m),
      authThrottle: createAuthThrottle({ now, store: core.store.throttles }),
      authFailureDelayMs: config.smtp.submission.authFailureDelayMs,
      scratch: core.space.scratch,
      budget: core.space.budget,
      hasRoom: core.space.hasRoom,
      now,
      logger,
    };
    const { listen, tlsListen } = config.smtp.submission;
    const size = (c: Config) => c.smtp.submission.maxMessageBytes;
    submissionPolicies.push(base);
    const extras = { metrics: core.metrics, sessionLimits, reusePort: o.reusePort === true, proxyFrom: config.smtp.proxyProtocolFrom };
    started(await bind('smtp.submission.listen', listen, () => startSmtpListener('submission', listen, submissionOptions(base), extras)), size);
    if (tlsListen) {
      const implicit = { ...base, secure: true };
      submissionPolicies.push(implicit);
      started(await bind('smtp.submission.tls_listen', tlsListen, () => startSmtpListener('submission_tls', tlsListen, submissionOptions(implicit), extras)), size);
    }
  }

  return {
    applyLimits(c) {
      for (const p of mxPolicies) Object.assign(p, { maxMessageBytes: c.smtp.mx.maxMessageBytes, maxHeaderBytes: c.smtp.maxHeaderBytes, maxMimeDepth: c.smtp.maxMimeDepth });
      for (const p of submissionPolicies) {
        Object.assign(p, {
          maxMessageBytes: c.smtp.submission.maxMessageBytes,
          maxHeaderBytes: c.smtp.maxHeaderBytes,
          maxMimeDepth: c.smtp.maxMimeDepth,
          maxConnectionsPerIp: c.smtp.submission.maxConnectionsPerIp,
        });
      }
      for (const l of listeners) l.listener.update({ size: l.size(c) });
    },
  };
}
