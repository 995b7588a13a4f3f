// Owns the concurrent-session caps of one SMTP listener: sessions per client address and sessions in all.
import { REPLY, type SmtpReply } from './replies.js';

/** 127.0.0.0/8, ::1 and IPv4-mapped loopback. */
export function isLoopback(ip: string): boolean {
  return ip === '::1' || ip.startsWith('127.') || ip.startsWith('::ffff:127.');
}

export interface ConnectionCapOptions {
  /** Name shown in the refusal (the listener's `smtp.hostname`). */
  hostname: string;
  /** Concurrent sessions from one client address (Postfix smtpd_client_connection_count_limit, default 50). */
  maxPerIp: number;
  /** Concurrent sessions in all. */
  maxTotal: number;
  /** Client addresses not subject to `maxPerIp` (still under `maxTotal`); none when absent. */
  exempt?: ((ip: string) => boolean) | undefined;
}

export interface ConnectionCaps {
  /**
   * Counts a new session in and returns undefined, or returns the `421 4.7.0` reply that refuses it (RFC 5321 §3.8:
   * 421 = service not available, try later; 4.7.0 as Postfix uses for connection limits). A refused session is not
   * counted, so `release` for it is a no-op.
   */
  admit(sessionId: string, ip: string): SmtpReply | undefined;
  /** Releases a session counted by `admit` (safe to call twice or for a refused session). */
  release(sessionId: string): void;
  /** Sessions currently counted (for tests and health). */
  size(): number;
}

/** Creates the caps for one listener (the counts are per listener, kept in memory: they describe open sockets). */
export function createConnectionCaps(opts: ConnectionCapOptions): ConnectionCaps {
  const counted = new Map<string, string>();
  const perIp = new Map<string, number>();
  return {
    admit(sessionId, ip) {
      if (counted.size >= opts.maxTotal) {
        return REPLY.tooManyConnections(opts.hostname);
      }
      const fromIp = perIp.get(ip) ?? 0;
      if (fromIp >= opts.maxPerIp && !opts.exempt?.(ip)) {
        return REPLY.tooManyConnectionsFrom(opts.hostname, ip);
      }
      counted.set(sessionId, ip);
      perIp.set(ip, fromIp + 1);
      return undefined;
    },
    release(sessionId) {
      const ip = counted.get(sessionId);
      if (ip === undefined) return;
      counted.delete(sessionId);
      const left = (perIp.get(ip) ?? 1) - 1;
      if (left > 0) perIp.set(ip, left);
      else perIp.delete(ip);
    },
    size: () => counted.size,
  };
}
