// Owns what one delivery attempt came to: every delivery of a group gets exactly one classified outcome, and its log
// line at the level its outcome deserves (the worker, ./worker.ts, dials; this decides what the dial meant).
import type { Logger } from 'pino';
import type { DeliveryRow, MessageRow } from '../../storage/ports/queue.js';
import type { AttemptOutcome, RecordedAttempt } from './queue.js';
import { classifyRouteFailure, type RouteFailure } from '../delivery/bounce-rules.js';
import type { DeliveryResult } from '../delivery/smtp-client.js';
import type { Shaped } from '../delivery/shaping.js';

/** How the attempt at one group (a message's recipients at one domain) ended. */
export type AttemptEnd =
  /** No host to dial: null MX, NXDOMAIN, no addresses, DNS failure. */
  | { kind: 'no-route'; route: RouteFailure }
  /** The SMTP client dialled and reports per recipient. */
  | { kind: 'dialled'; result: DeliveryResult }
  /** Our own failure (a missing body, a thrown error). */
  | { kind: 'local-error' };

/**
 * The one place attempt outcome records are built (mox's single `fail` in `deliver()`): whichever way the attempt
 * ended, every delivery of the group gets exactly one outcome, classified here, for the queue to record.
 */
export function outcomesOf(message: MessageRow, deliveries: readonly DeliveryRow[], end: AttemptEnd): AttemptOutcome[] {
  return deliveries.map((delivery): AttemptOutcome => {
    const base = { delivery, message, command: null, host: null, suppress: false };
    switch (end.kind) {
      case 'no-route':
        return { ...base, ...classifyRouteFailure(end.route) };
      case 'local-error':
        // Unknown means temporary (ARCHITECTURE invariant 3): defer, never bounce, on our own failures.
        return { ...base, outcome: 'deferred', code: null, status: '4.3.0', response: 'local error during delivery' };
      case 'dialled': {
        const r = end.result.results.find((x) => x.rcpt === delivery.rcpt);
        // A recipient the client did not report on is our failure as well: deferred, never lost.
        if (!r) return { ...base, outcome: 'deferred', code: null, status: '4.3.0', response: 'no result for recipient' };
        return {
          ...base,
          outcome: r.outcome,
          code: r.code ?? null,
          status: r.status ?? null,
          response: r.response,
          command: r.command ?? null,
          host: end.result.host ?? null,
          suppress: r.suppress,
        };
      }
    }
  });
}

/**
 * What shaping rules made of the replies (mta/delivery/shaping.ts): a recipient a `bounce` rule matched fails now
 * (its 4xx status made permanent, the rule named in the response); a suspension holds the group's deferred
 * recipients until it lifts, whatever the retry schedule says.
 */
export function shapeOutcomes(outcomes: AttemptOutcome[], shaped: Shaped | undefined): AttemptOutcome[] {
  if (!shaped) return outcomes;
  return outcomes.map((o) => {
    const rule = shaped.bounce.get(o.delivery.rcpt);
    if (rule !== undefined && o.outcome !== 'delivered') {
      const status = o.status === null ? '5.0.0' : `5${o.status.slice(1)}`;
      return { ...o, outcome: 'bounced', status, response: `${o.response} (bounced by shaping rule ${rule})` };
    }
    return o.outcome === 'deferred' && shaped.notBefore !== undefined ? { ...o, notBefore: shaped.notBefore } : o;
  });
}

/**
 * How loud an attempt's log line is: delivered is info; a deferral, and a bounce a remote server gave (its 5xx),
 * warn; a bounce of our own making — the queue lifetime ran out, or no server was ever reached (null MX, no such
 * domain, our own error) — error, since no remote reply explains it.
 */
export function attemptLevel(o: AttemptOutcome, r: RecordedAttempt): 'info' | 'warn' | 'error' {
  if (r.outcome === 'delivered') return 'info';
  if (r.outcome === 'deferred') return 'warn';
  return r.expired || o.code === null ? 'error' : 'warn';
}

/**
 * One line per recipient per attempt, as Postfix's `status=` lines: the queue id (`250 … queued as`), the relay
 * host that answered, its reply and what happens next.
 */
export function logAttempt(log: Logger, o: AttemptOutcome, r: RecordedAttempt): void {
  log[attemptLevel(o, r)](
    {
      queueId: o.message.request_id,
      messageId: o.message.message_id,
      deliveryId: o.delivery.id,
      rcpt: o.delivery.rcpt,
      relay: o.host,
      attempt: o.delivery.attempts,
      outcome: r.outcome,
      code: r.code,
      status: r.status,
      response: r.response,
      ...(r.nextAttemptAt !== null ? { next_attempt_at: new Date(r.nextAttemptAt).toISOString() } : {}),
    },
    'delivery attempt',
  );
}
