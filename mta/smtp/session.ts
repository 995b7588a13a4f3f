// Owns what the MX and submission listeners share: the Received trace field and the DATA stage.
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { SMTPServerSession } from 'smtp-server';
import { createScratchArea, type Scratch, type ScratchArea } from '../../storage/scratch.js';
import { BufferBoundReached } from '../../storage/message-source.js';
import { storageFailure } from '../../storage/ports/health.js';
import type { BufferBudget } from '../buffer-budget.js';
import { SAMPLE_BODY_BYTES } from '../message-content.js';
import { dataGuardReply, DataTooSlow, receiveGuarded, refusalOf, type DataGuardOptions } from './data-guard.js';
import { foldLine } from './header-lines.js';
import { REPLY, type SmtpReply } from './replies.js';
import { closeSession } from './smtp-server-seam.js';
import { answer } from './smtp-server-reply.js';

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
  /** RFC 3848 / RFC 6531 §3.7.3 `with` protocol: SMTP, ESMTP, ESMTPS, ESMTPSA, UTF8SMTP… */
  protocol: string;
  id: string;
  /** The `for` clause, given only for a single recipient (as Postfix does, so a Bcc list is not exposed). */
  rcpt?: string | undefined;
  date: number;
}

/**
 * The trace field we prepend (RFC 5321 §4.4):
 * `Received: from <helo> ([ip]) (using <tls>) by <hostname> (Sluice) with <proto> id <id> for <rcpt>; <date>`.
 * A HELO that is neither a domain (≤ 253 octets) nor an address literal is replaced by the client's address literal
 * and shown, defanged and cut to 64 characters, in the comment; IPv6 literals use the `IPv6:` tag (RFC 5321
 * §4.1.3); the `for` clause is left out for an address over 254 octets. No line is over 998 octets.
 */
export function receivedHeader(r: ReceivedInfo): string {
  const literal = r.clientIp.includes(':') ? `[IPv6:${r.clientIp}]` : `[${r.clientIp}]`;
  const heloOk =
    r.helo.length <= 253 && (/^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/i.test(r.helo) || /^\[(?:IPv6:)?[0-9a-f:.]+\]$/i.test(r.helo));
  const from = heloOk ? `from ${r.helo} (${literal})` : `from ${literal} (${literal} helo=${commentSafe(r.helo) || 'none'})`;
  const lines = [`Received: ${from}`];
  if (r.tls) lines.push(`\t(using ${commentSafe(r.tls.version)} with cipher ${commentSafe(r.tls.cipher)})`);
  lines.push(`\tby ${r.hostname} (Sluice) with ${r.protocol} id ${r.id}`);
  // RFC 5321 §4.5.3.1.3: a path is at most 256 octets; a longer address is left out rather than make a long line.
  const rcpt = r.rcpt !== undefined && Buffer.byteLength(r.rcpt) <= 254 ? r.rcpt : undefined;
  lines.push(rcpt ? `\tfor <${rcpt}>; ${rfc5322Date(r.date)}` : `\t; ${rfc5322Date(r.date)}`);
  // RFC 5322 §2.1.1: each line ideally ≤ 78 octets (a long host name folds at its spaces), never over 998.
  return lines.map((l) => foldLine(l)).join('\r\n') + '\r\n';
}

/** RFC 3848 / RFC 6531 §3.7.3 `with` keyword of a session: (UTF8)SMTP or ESMTP, + S over TLS, + A after AUTH. */
export function protocolOf(session: SMTPServerSession): string {
  const base = session.envelope.smtpUtf8 ? 'UTF8SMTP' : session.openingCommand === 'EHLO' ? 'ESMTP' : 'SMTP';
  return `${base}${session.secure ? 'S' : ''}${session.user ? 'A' : ''}`;
}

/** The Received field for the current transaction of `session`, by `hostname`, for the accepted recipients. */
export function receivedFor(session: SMTPServerSession, hostname: string, rcptTo: readonly string[], date: number): string {
  const cipher = session.secure && session.tlsOptions ? session.tlsOptions : undefined;
  return receivedHeader({
    hostname,
    helo: session.hostNameAppearsAs || '',
    clientIp: session.remoteAddress,
    tls: cipher ? { version: cipher.version, cipher: cipher.name } : undefined,
    protocol: protocolOf(session),
    id: `${session.id}.${session.transaction}`,
    rcpt: rcptTo.length === 1 ? rcptTo[0] : undefined,
    date,
  });
}

/** Postfix's smtpd_min_data_rate default (bytes per second) and smtpd_timeout as the grace before it applies. */
export const MIN_DATA_RATE = Object.freeze({ bytesPerSec: 500, graceMs: 300_000 });

/** Defaults of `smtp.max_header_bytes` and `smtp.max_mime_depth`: Postfix's header_size_limit and mime_nesting_limit. */
export const STRUCTURE_LIMITS = Object.freeze({ maxHeaderBytes: 102_400, maxMimeDepth: 100 });

export interface DataStageOptions {
  maxBytes: number;
  /** Largest header section of the message or of any MIME part; over it → `552 5.3.4`. */
  maxHeaderBytes: number;
  /** Deepest MIME nesting; deeper → `554 5.6.0`. */
  maxMimeDepth: number;
  /** Minimum DATA rate (DataGuardOptions.minRate); too slow → `421 4.4.2` and the connection is closed. */
  minRate?: DataGuardOptions['minRate'];
  /** Where the message is kept while it is handled: in memory up to a bound, in a private file beyond. */
  scratch: ScratchArea;
  /**
   * The process-wide bound on message bytes in memory (`smtp.max_buffered_bytes`): each DATA reserves what its
   * handler reads into memory (the header section and the sample, `dataWorkingBytes`) or is answered `452 4.3.1`.
   */
  budget?: BufferBudget | undefined;
  log: Logger;
  /**
   * Told of a message the data guard refused (its reply and the guard's reason: `size-exceeded`, `bare-lf`…) before
   * the client hears it; must not reject (the reply stands either way). The inbound log records it.
   */
  onRefused?: (reply: SmtpReply, reason: string) => Promise<void>;
}

let fallback: ScratchArea | undefined;

/**
 * The scratch area of a listener given none (started without a data_dir: tests, tools): 256 KiB in memory per
 * message, spilled beyond it to unlinked files in the OS temp directory. `sluice serve` always passes data_dir/tmp.
 */
export function defaultScratch(): ScratchArea {
  fallback ??= createScratchArea({ dir: path.join(os.tmpdir(), 'sluice-scratch'), memoryBytes: 256 * 1024 });
  return fallback;
}

/** Bytes one DATA's handler may hold in memory besides its scratch: the header section and the body sample. */
export function dataWorkingBytes(maxHeaderBytes: number): number {
  return maxHeaderBytes + 4 + SAMPLE_BODY_BYTES;
}

/**
 * The reply for a failure a handler did not decide on: the disk filled up (`452 4.3.1`, insufficient storage), the
 * in-memory bound was reached (`452 4.3.1`), anything else `451 4.3.0` (unknown means temporary, invariant 3).
 */
export function failureReply(err: unknown): SmtpReply {
  if (err instanceof BufferBoundReached) return REPLY.tooManyMessagesInProgress;
  if (storageFailure(err) === 'disk-full') return REPLY.insufficientStorage;
  return REPLY.tempfail;
}

/**
 * Runs the DATA stage of one transaction for an smtp-server `onData`: reads the stream through the data guard into
 * a scratch (552 5.3.4 over the size or a header section over its limit, 550 5.6.0 for a bare CR or LF, 554 5.6.0
 * for MIME nested too deep), else answers `handle(data)`'s reply — exactly once — and discards the scratch after
 * it. A DATA that cannot reserve its working memory, or whose scratch could not be written (disk full), is read to
 * its end and answered `452 4.3.1` without keeping anything.
 * A client that leaves mid-DATA, or is cut off as too slow, makes the stream fail: `handle` never runs and nothing
 * is kept. An error thrown by `handle` is answered by `failureReply`.
 */
export function runDataStage(
  stream: Readable,
  session: SMTPServerSession,
  callback: (err?: Error | null, message?: string) => void,
  opts: DataStageOptions,
  handle: (data: Scratch) => Promise<SmtpReply>,
): void {
  let answered = false;
  const once = (err?: Error | null, message?: string) => {
    if (answered) return;
    answered = true;
    callback(err, message);
  };
  const release = opts.budget ? opts.budget.reserve(dataWorkingBytes(opts.maxHeaderBytes)) : () => {};
  if (!release) {
    // smtp-server drains the stream it was given before writing this reply (after the client's final dot).
    opts.log.warn({ sessionId: session.id, held: opts.budget?.used() }, 'DATA refused: smtp.max_buffered_bytes reached');
    return answer(once, REPLY.tooManyMessagesInProgress);
  }
  const writer = opts.scratch.writer();
  const run = async () => {
    const limits = { maxBytes: opts.maxBytes, maxHeaderBytes: opts.maxHeaderBytes, maxMimeDepth: opts.maxMimeDepth };
    const verdict = await receiveGuarded(stream, { ...limits, minRate: opts.minRate }, writer);
    const refused = dataGuardReply(verdict, limits);
    if (refused) {
      opts.log.info({ sessionId: session.id, verdict }, 'message refused by data guard');
      if (!writer.failure) await writer.scratch().discard();
      const guard = refusalOf(verdict, limits);
      if (guard && !verdict.ok) await opts.onRefused?.(guard, verdict.reason).catch(() => undefined);
      return once(refused);
    }
    if (writer.failure) {
      opts.log.error({ sessionId: session.id, err: writer.failure }, 'DATA could not be written to scratch');
      return answer(once, failureReply(writer.failure));
    }
    const data = writer.scratch();
    try {
      answer(once, await handle(data));
    } finally {
      await data.discard();
    }
  };
  run()
    .catch((err: unknown) => {
      if (err instanceof DataTooSlow) {
        // RFC 5321 §3.8: 421 closes the channel; RFC 3463 4.4.2 "bad connection".
        opts.log.info({ sessionId: session.id, bytes: err.bytes, elapsedMs: err.elapsedMs }, 'DATA too slow: connection closed');
        closeSession(session, REPLY.dataTooSlow);
      } else {
        opts.log.warn({ sessionId: session.id, err }, 'DATA stage failed');
      }
      answer(once, failureReply(err));
    })
    .finally(release);
}

/**
 * The log line of a refused RCPT (Postfix's `NOQUEUE: reject: RCPT from …`): the client, the recipient and the reply
 * with its reason, at info — a refusal is the listener doing its job, not a fault.
 */
export function logRcptRefused(log: Logger, session: SMTPServerSession, rcpt: string, reply: SmtpReply, reason: string): void {
  const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
  log.info(
    { sessionId: session.id, ip: session.remoteAddress, mailFrom, rcpt, reason, reply: `${reply.code} ${reply.status} ${reply.message}` },
    'recipient refused',
  );
}
