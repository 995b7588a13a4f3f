// Owns the SMTP client's options (mta/delivery/smtp-client.ts): names, caps, timeouts, TLS trust and destination limits.
import type { SlotKeeper } from './connection-slots.js';
import type { TlsResultSink } from './tls-results.js';

export interface SmtpClientOptions {
  /** Our EHLO name (`smtp.hostname`). */
  hostname: string;
  /** Connections open at once per destination address:port (Postfix `default_destination_concurrency_limit` = 20). */
  maxPerDestination?: number;
  /** Transactions per connection before it is closed (ZoneMTA/Postfix reuse connections for a bounded count). */
  maxMessagesPerConnection?: number;
  /** Idle connections are closed after this long. */
  idleMs?: number;
  connectTimeoutMs?: number;
  greetingTimeoutMs?: number;
  socketTimeoutMs?: number;
  /** Local address to bind outgoing connections to. */
  localAddress?: string;
  /** CA certificates trusted besides Node's (`outbound.tls_ca_file`) where a certificate must verify (MTA-STS). */
  extraCa?: () => readonly string[];
  /** Each new session to an MTA-STS host reports how its TLS went here (TLS-RPT). */
  onTlsResult?: TlsResultSink;
  /**
   * The destination limit of an MX host name (outbound.destination_limits): sessions open at once to every host of its
   * pattern, and transactions per session.
   */
  limitOf?: (hostName: string) => { pattern: string; connections: number; messagesPerConnection: number } | undefined;
  /** A limit's `connections` across every process and node: a slot taken from the store per session (else per process). */
  slots?: SlotKeeper;
}
