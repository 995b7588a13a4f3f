// Owns starting and stopping one smtp-server listener on a host:port (port 0 = ephemeral) and reporting its address;
// the reach-ins into smtp-server's connection internals it installs live in mta/smtp/smtp-server-seam.ts.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { HostPort } from '../../config/keys.js';
import { REPLY_CLASSES, SMTP_COMMANDS, type SmtpCommandLabel } from '../metrics-labels.js';
import { replyClass, type Metrics } from '../metrics.js';
import { acceptProxyV2 } from './proxy-v2.js';
import { closeIdleSessions, installSmtpServerSeam, seamOptions, type SessionLimits } from './smtp-server-seam.js';

export interface SmtpListener {
  readonly name: string;
  /** The bound address (actual port when 0 was asked for). */
  address(): HostPort;
  listening(): boolean;
  /**
   * Changes what new sessions get: the certificate pair (sessions already in TLS keep theirs; smtp-server rebuilds
   * its secure context) and the SIZE advertised and enforced by smtp-server (RFC 1870).
   */
  update(change: { tls?: { cert: string; key: string }; size?: number }): void;
  close(): Promise<void>;
}

/**
 * Extra listener options: `greetDelayMs` replaces smtp-server's fixed 100 ms early-talker pause before the 220;
 * `metrics` counts sessions and replies under the listener's name; `sessionLimits` sets the junk-command limit and
 * the session deadline (smtp.junk_command_limit, smtp.session_deadline_minutes).
 */
export interface ListenerExtras {
  greetDelayMs?: number;
  metrics?: Metrics;
  sessionLimits?: SessionLimits;
  /**
   * Bind with SO_REUSEPORT (and `exclusive`, so a node:cluster child binds itself instead of through the primary):
   * the sibling processes of `server.processes` share the port and the kernel spreads connections among them.
   */
  reusePort?: boolean;
  /**
   * smtp.proxy_protocol_from: the load balancers whose connections begin with a PROXY header (v2, or v1), required
   * from them; the session then sees the client it names. Empty or absent: no header is read from anyone.
   */
  proxyFrom?: readonly string[];
}

/**
 * Starts `options` on `listen`; resolves once bound, rejects with the bind error itself (an errno error: port in
 * use, no permission), which the composition root turns into a message naming the key.
 */
export function startSmtpListener(name: string, listen: HostPort, options: SMTPServerOptions, extras: ListenerExtras = {}): Promise<SmtpListener> {
  installSmtpServerSeam();
  const m = extras.metrics;
  // This listener's series start at 0; the command histogram's children are bound once, so a reply costs one observe.
  const timers = new Map<SmtpCommandLabel, { observe(seconds: number): void }>();
  const replies: { inc(): void }[] = [];
  if (m) {
    m.smtpSessions.inc({ listener: name }, 0);
    for (const cls of REPLY_CLASSES) {
      m.smtpReplies.inc({ listener: name, class: cls }, 0);
      replies.push(m.smtpReplies.labels({ listener: name, class: cls }));
    }
    for (const command of SMTP_COMMANDS) {
      m.smtpCommandDuration.zero({ listener: name, command });
      timers.set(command, m.smtpCommandDuration.labels({ listener: name, command }));
    }
  }
  const server = new SMTPServer({
    logger: false,
    ...options,
    // RFC 2034: every reply carries an RFC 3463 status (the seam's send override); advertised in EHLO.
    hideENHANCEDSTATUSCODES: false,
    ...seamOptions(
      extras.greetDelayMs ?? 0,
      extras.metrics && {
        session: () => extras.metrics?.smtpSessions.inc({ listener: name }),
        // REPLY_CLASSES is 2xx…5xx in order; any other code (none is sent) by its class.
        reply: (code) => {
          const bound = replies[Math.floor(code / 100) - 2];
          if (bound) bound.inc();
          else extras.metrics?.smtpReplies.inc({ listener: name, class: replyClass(code) });
        },
        command: (command, seconds) => timers.get(command)?.observe(seconds),
      },
      extras.sessionLimits,
    ),
    ...(extras.proxyFrom?.length ? { useProxy: [...extras.proxyFrom] } : {}),
  });
  if (extras.proxyFrom?.length) acceptProxyV2(server);
  return new Promise((resolve, reject) => {
    // smtp-server re-emits its net.Server's errors on itself: a bind error (EADDRINUSE, EACCES) with no listener
    // there is an unhandled 'error' event that kills the process with a stack trace. Catch it on the SMTPServer and
    // reject with the errno error, for the caller to name the configuration key.
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen({ port: listen.port, host: listen.host, ...(extras.reusePort ? { reusePort: true, exclusive: true } : {}) }, () => {
      server.off('error', onError);
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
        update(change) {
          if (change.tls) server.updateSecureContext({ cert: change.tls.cert, key: change.tls.key });
          if (change.size !== undefined) server.options.size = change.size;
        },
        close: () =>
          new Promise<void>((done) => {
            open = false;
            server.close(() => done());
            // Sessions with nothing under way end now (421 4.3.2); the close grace is for transactions to finish.
            closeIdleSessions(server);
          }),
      });
    });
  });
}
