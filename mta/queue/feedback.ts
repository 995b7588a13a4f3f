// Owns what Sluice does with mail that comes back (issue 35): bounces to a VERP return path and feedback-loop reports
// become late outcomes, complaints and suppressions of the delivery a signed token names; nothing else changes anything.
import type { Logger } from 'pino';
import type { DeliveryRow, LateOutcome, MessageRow, QueueStore } from '../../storage/ports/queue.js';
import type { SuppressionStore } from '../../storage/ports/suppressions.js';
import type { MessageContent } from '../message-content.js';
import type { Metrics } from '../metrics.js';
import { eventMessageOf, eventPayload } from './events.js';
import type { PermanentFailure } from './queue.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';
import { recipientClass } from '../delivery/bounce-rules.js';
import { parseReturnPath, verifyReturnPath } from '../delivery/return-path.js';
import { readReport, type DsnRecipientFields, type Report } from '../delivery/report-parse.js';

export interface FeedbackDeps {
  /** The return path MAC key (settings `return_path_secret`, shared by every node). */
  secret: Buffer;
  /** `outbound.return_path_domain` and `outbound.feedback_address`, as they are now. */
  returnPathDomain: () => string | undefined;
  feedbackAddress: () => string | undefined;
  store: Pick<QueueStore, 'findDelivery' | 'findMessage' | 'recordLateOutcome'>;
  suppressions: Pick<SuppressionStore, 'unsubscribe'>;
  /** `customer_handle` of an account id. */
  handleOf: (accountId: number) => Promise<string>;
  /** accounts.max_suppressions. */
  maxSuppressions?: number;
  metrics?: Pick<Metrics, 'reportsReceived'>;
  /**
   * Passes a late bounce on to a sender that expects RFC 3464 DSNs (an SMTP submission: ./bounce-dsn.ts wantsDsn),
   * durably, before the bounce is recorded: its envelope sender was replaced by the return path, so the bounce
   * would otherwise never reach it. Called only while the delivery is still `delivered` (a replay forwards nothing).
   */
  forwardBounce?: (message: MessageRow, failure: PermanentFailure) => Promise<void>;
  /**
   * Told of each new complaint once it is stored, before the 250 (the alert monitors judge the sender identity's
   * complaint rate); a repeated one is not told. Must not reject: the complaint stands.
   */
  afterComplaint?: (message: MessageRow) => Promise<void>;
  now: () => number;
  logger: Logger;
}

/** A delivery a return path token names, with its message. */
interface Named {
  delivery: DeliveryRow;
  message: MessageRow;
}

/** How the MX treats one RCPT address: one of ours (a return path that verified, the feedback address), or not. */
export type FeedbackRecipient = { ours: true } | { ours: false; reply?: SmtpReply };

/**
 * `b+<id>.<mac>@<domain>` anywhere in a text: where a feedback report carries the original's return path. Any domain:
 * the original may have left on the operator's return path domain or on a customer's aligned `<prefix>.<domain>`
 * (outbound.return_path_prefix), and the MAC, checked before anything is done, is what makes a token ours.
 */
function tokensIn(text: string): string[] {
  return [...text.matchAll(/\b(b\+[0-9a-z]{1,11}\.[a-z2-7]{16})@[a-z0-9-]+(\.[a-z0-9-]+)+/gi)].map((m) => m[1]!);
}

/** The SMTP code a late report implies: the one its diagnostic quotes, else 550 / 450 by its status class. */
function codeOf(diagnostic: string, status: string): number {
  const m = /^([45]\d\d)\b/.exec(diagnostic);
  return m ? Number(m[1]) : status.startsWith('5') ? 550 : 450;
}

/**
 * The per-recipient block of a DSN about `rcpt`: the one naming it (Original- or Final-Recipient), else the first
 * that failed, else the first delayed one. A VERP return path already says which recipient the DSN is about; a
 * forwarded mailbox's DSN names the address it was forwarded to, and still counts for ours.
 */
function blockFor(recipients: readonly DsnRecipientFields[], rcpt: string): DsnRecipientFields | undefined {
  const lc = rcpt.toLowerCase();
  return (
    recipients.find((r) => r.originalRecipient?.toLowerCase() === lc || r.finalRecipient?.toLowerCase() === lc) ??
    recipients.find((r) => r.action === 'failed') ??
    recipients.find((r) => r.action === 'delayed')
  );
}

/** What a bounce report says of one delivery: failed for good, delayed, or nothing (delivered, relayed, no bounce). */
export function lateVerdict(report: Report, rcpt: string): { outcome: LateOutcome['outcome']; status: string; diagnostic: string; remoteMta: string | null } | undefined {
  if (report.kind === 'text-bounce') {
    return { outcome: report.action === 'failed' ? 'bounced' : 'deferred', status: report.status, diagnostic: report.diagnostic, remoteMta: null };
  }
  if (report.kind !== 'dsn') return undefined;
  const block = blockFor(report.recipients, rcpt);
  if (!block || (block.action !== 'failed' && block.action !== 'delayed')) return undefined;
  const failed = block.action === 'failed';
  // RFC 3464 §2.3.4: Status agrees with Action; a failed one without a 5.x.x status is still final.
  const status = block.status && block.status[0] === (failed ? '5' : '4') ? block.status : failed ? '5.0.0' : '4.0.0';
  return {
    outcome: failed ? 'bounced' : 'deferred',
    status,
    diagnostic: (block.diagnostic ?? `${status} reported by ${report.reportingMta ?? 'the receiving system'}`).slice(0, 1000),
    remoteMta: block.remoteMta ?? report.reportingMta,
  };
}

/** Creates the feedback handler the MX listener hands return path and feedback-loop mail to. */
export function createFeedback(deps: FeedbackDeps) {
  const log = deps.logger.child({ component: 'feedback' });

  /** The delivery a return path local part names, when its MAC verifies and it is still stored. */
  async function named(local: string): Promise<Named | undefined> {
    const parsed = parseReturnPath(local);
    if (!parsed) return undefined;
    const delivery = await deps.store.findDelivery(parsed.deliveryId);
    const message = delivery && (await deps.store.findMessage(delivery.message_id));
    if (!delivery || !message || message.kind !== 'outbound' || message.account_id === null) return undefined;
    return verifyReturnPath(deps.secret, parsed.mac, { id: delivery.id, rcpt: delivery.rcpt, message }) ? { delivery, message } : undefined;
  }

  const eventBase = async (m: MessageRow) => eventMessageOf(m, await deps.handleOf(m.account_id!));

  async function bounce(n: Named, verdict: NonNullable<ReturnType<typeof lateVerdict>>): Promise<boolean> {
    const { delivery, message } = n;
    const now = deps.now();
    const accountId = message.account_id!;
    const code = codeOf(verdict.diagnostic, verdict.status);
    const kind = verdict.outcome === 'bounced' ? 'hard-bounced' : 'soft-bounced';
    const o: LateOutcome = {
      deliveryId: delivery.id,
      outcome: verdict.outcome,
      attempt: { at: now, code, status: verdict.status, response: verdict.diagnostic, host: verdict.remoteMta },
      event: {
        accountId,
        kind,
        payload: eventPayload(kind, await eventBase(message), now, { recipients: [delivery.rcpt], status: verdict.status, reason: verdict.diagnostic }),
        at: now,
      },
    };
    if (verdict.outcome === 'bounced') {
      // The log row tells the search the message bounced after all.
      o.log = { lastcmd: 'DSN', rspcode: code, rspmsg: verdict.diagnostic, delivered: false, updated_at: now };
      // The queue's rule: only a recipient-class failure (RFC 3463 5.1.x, 5.2.1) suppresses the address.
      if (recipientClass(verdict.status)) {
        o.suppress = { accountId, recipient: delivery.rcpt, sender: message.mail_from || null, ...(deps.maxSuppressions !== undefined ? { maxEntries: deps.maxSuppressions } : {}) };
      }
    }
    // Forwarded first: a crash between the two leaves the report unanswered (the reporting MTA sends it again, and
    // the sender may get the bounce twice), never recorded with the sender left unaware.
    if (verdict.outcome === 'bounced' && delivery.state === 'delivered' && deps.forwardBounce) {
      await deps.forwardBounce(message, { delivery, code, status: verdict.status, response: verdict.diagnostic, host: verdict.remoteMta });
    }
    return deps.store.recordLateOutcome(o);
  }

  async function complaint(n: Named): Promise<boolean> {
    const { delivery, message } = n;
    const now = deps.now();
    const accountId = message.account_id!;
    // RFC 5965 reports one complaint per report; repeated ones about the same recipient add neither entry nor event.
    const added = await deps.suppressions.unsubscribe({
      accountId,
      recipient: delivery.rcpt,
      source: 'spam_complaint',
      now,
      ...(deps.maxSuppressions !== undefined ? { maxPerAccount: deps.maxSuppressions } : {}),
      event: { accountId, kind: 'complained', payload: eventPayload('complained', await eventBase(message), now, { recipients: [delivery.rcpt] }), at: now },
      // The log search (and the console's log view) shows the complaint on the delivery's row, as a DSN's bounce.
      logNote: { deliveryId: delivery.id, lastcmd: 'ARF', rspmsg: `spam complaint: RFC 5965 abuse report received ${new Date(now).toISOString()}` },
    });
    // Only a new one: a replayed report must not count twice toward the rate, nor fire again.
    if (added) await deps.afterComplaint?.(message);
    return added;
  }

  function count(kind: Report['kind'], result: string): void {
    deps.metrics?.reportsReceived.inc({ kind, result });
  }

  return {
    /**
     * RCPT time: a return path on the return path domain is ours when its token verifies (a forged, altered or
     * expired one is refused 550 5.1.1: it can change nothing); the feedback address is ours; anything else is left
     * to the MX's own judgement (a served domain, or relay denied).
     */
    async recipient(address: string): Promise<FeedbackRecipient> {
      const lc = address.toLowerCase();
      if (lc === deps.feedbackAddress()) return { ours: true };
      const domain = deps.returnPathDomain();
      const at = lc.lastIndexOf('@');
      if (domain === undefined || lc.slice(at + 1) !== domain || !lc.startsWith('b+')) return { ours: false };
      return (await named(lc.slice(0, at))) ? { ours: true } : { ours: false, reply: REPLY.unknownReturnPath };
    },

    /**
     * DATA of a transaction to our addresses only: reads the report from the message's first bytes and applies it
     * to each named delivery, durably, before the 250. Mail that is no report (an auto-reply) is taken and dropped:
     * refusing it would bounce it back to a null sender or loop.
     */
    async take(msg: { rcptTo: readonly string[]; content: MessageContent; clientIp: string }): Promise<SmtpReply> {
      const { report, texts } = readReport(msg.content.sample);
      const domain = deps.returnPathDomain();
      for (const rcpt of msg.rcptTo) {
        const lc = rcpt.toLowerCase();
        let target: Named | undefined;
        if (domain !== undefined && lc.endsWith(`@${domain}`) && lc.startsWith('b+')) target = await named(lc.slice(0, lc.lastIndexOf('@')));
        if (report.kind === 'arf' && !target && domain !== undefined) {
          // A feedback loop sends its report to the registered address: the original's return path names the delivery.
          for (const token of new Set(texts.flatMap((t) => tokensIn(t)))) {
            target = await named(token.toLowerCase());
            if (target) break;
          }
        }
        let result: string;
        if (!target) result = 'unmatched';
        else if (report.kind === 'arf') result = report.feedbackType === 'abuse' ? ((await complaint(target)) ? 'complained' : 'repeated') : 'ignored';
        else {
          const verdict = lateVerdict(report, target.delivery.rcpt);
          result = !verdict ? 'ignored' : (await bounce(target, verdict)) ? (verdict.outcome === 'bounced' ? 'bounced' : 'delayed') : 'repeated';
        }
        count(report.kind, result);
        log.info({ rcpt, clientIp: msg.clientIp, report: report.kind, result, deliveryId: target?.delivery.id, account: target?.message.account_id }, 'report received');
      }
      return REPLY.reportTaken;
    },
  };
}

export type Feedback = ReturnType<typeof createFeedback>;
