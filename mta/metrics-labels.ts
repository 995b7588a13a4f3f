// Owns the label values Sluice's metric families are known to take, so that a fresh server exposes a zero series for
// each (Prometheus users expect `rate()` and alerts to see a 0, not "no data"), and the label helpers of the timing
// families: an SMTP command's name and an HTTP status's class. Bounded by construction: no label value comes from a
// client, a recipient or a path.
import { SPAM_DISPOSITIONS, VIRUS_DISPOSITIONS } from '../storage/ports/smtp-log.js';
import type { MessageKind } from '../storage/ports/queue.js';

/** What the queue holds (storage/ports/queue.ts MessageKind). */
export const MESSAGE_KINDS: readonly MessageKind[] = ['outbound', 'relay', 'dsn'];
/** Unfinished delivery states the queue gauge counts. */
export const QUEUE_STATES = ['queued', 'sending', 'held'] as const;
/** An attempt's recorded outcome; the final ones end a delivery's latency. */
export const ATTEMPT_OUTCOMES = ['delivered', 'deferred', 'bounced'] as const;
export const FINAL_OUTCOMES = ['delivered', 'bounced'] as const;
/** The inbound policy step's actions (filters/inbound-verdicts.ts) and the DATA-stage tempfail. */
export const INBOUND_ACTIONS = ['relay', 'flag', 'quarantine', 'block', 'tempfail'] as const;
/** The classifier's classes and autolearn's outcomes (mta/inbound/autolearn.ts; storage/ports/bayes.ts LearnOutcome). */
export const BAYES_CLASSES = ['spam', 'ham'] as const;
export const AUTOLEARN_OUTCOMES = ['learned', 'relearned', 'already', 'over_hourly_bound', 'failed'] as const;
/** Which report results each kind of report can have (mta/queue/feedback.ts). */
export const REPORT_RESULTS: Readonly<Record<string, readonly string[]>> = {
  dsn: ['bounced', 'delayed', 'repeated', 'ignored', 'unmatched'],
  'text-bounce': ['bounced', 'delayed', 'repeated', 'ignored', 'unmatched'],
  arf: ['complained', 'repeated', 'ignored', 'unmatched'],
  none: ['ignored', 'unmatched'],
};
/** Outbound screening's scanners and the dispositions of each (lower case, as counted). */
export const SCAN_DISPOSITIONS: Readonly<Record<string, readonly string[]>> = {
  spam: SPAM_DISPOSITIONS.map((d) => d.toLowerCase()),
  virus: VIRUS_DISPOSITIONS.map((d) => d.toLowerCase()),
};
/** A webhook POST's result (storage/ports/webhooks.ts BatchStatus). */
export const WEBHOOK_STATUSES = ['1xx_response', '2xx_response', '3xx_response', '4xx_response', '5xx_response', 'no_response'] as const;
/** The DNS record types asked (mta/delivery/dns-client.ts QueryType) and how the cache answered. */
export const DNS_TYPES = ['A', 'AAAA', 'MX', 'TXT', 'CNAME', 'PTR', 'NS'] as const;
export const DNS_RESULTS = ['hit', 'shared', 'miss'] as const;
/** Reply classes of an SMTP reply (RFC 5321 §4.2.1: the first digit). */
export const REPLY_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;

/**
 * The `command` label of the SMTP command histogram: the RFC 5321 / 3207 / 4954 verbs smtp-server answers, `message`
 * for the DATA phase itself (from the 354 to the reply after the final dot: the transfer and every check of the
 * message), and `other` for anything else (junk, unknown verbs, HELP, VRFY, EXPN), so a client cannot make a series.
 */
export const SMTP_COMMANDS = ['EHLO', 'HELO', 'STARTTLS', 'AUTH', 'MAIL', 'RCPT', 'DATA', 'message', 'RSET', 'NOOP', 'QUIT', 'other'] as const;
export type SmtpCommandLabel = (typeof SMTP_COMMANDS)[number];

const VERBS: ReadonlyMap<string, SmtpCommandLabel> = new Map(
  SMTP_COMMANDS.filter((c) => c !== 'message' && c !== 'other').map((c) => [c, c] as [string, SmtpCommandLabel]),
);

/** The label of a command line: its verb when it is one of SMTP_COMMANDS, else `other`. Allocates only the verb. */
export function smtpCommandOf(line: Buffer): SmtpCommandLabel {
  // A verb is at most 8 letters (STARTTLS); read up to the first space or the end, upper-cased.
  let end = 0;
  while (end < line.length && end < 9 && line[end] !== 0x20 && line[end] !== 0x0d && line[end] !== 0x0a) end++;
  if (end === 0 || end > 8) return 'other';
  return VERBS.get(line.toString('latin1', 0, end).toUpperCase()) ?? 'other';
}

/** The status class label of an HTTP answer: `2xx` … `5xx` (RFC 9110 §15). */
export function statusClass(status: number): string {
  return STATUS_CLASSES[Math.floor(status / 100)] ?? 'other';
}
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];
