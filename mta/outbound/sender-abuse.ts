// Owns what a sender identity's scanned mail does to it: the scanning policy that applies, strikes toward a block,
// the block itself, the alerts it raises, and delisting (the API's rate-limited, the operator's not).
import type { Logger } from 'pino';
import type { Config } from '../../config/load.js';
import type { ScanPolicy } from '../../config/keys.js';
import { decideBlock, type AlertCondition } from '../../filters/alert-conditions.js';
import { strikeOf, type OutboundScanVerdict } from '../../filters/outbound-verdicts.js';
import type { AccountStore } from '../../storage/ports/accounts.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { SenderAbuseStore } from '../../storage/ports/sender-abuse.js';
import type { SenderBlockRow } from '../../storage/ports/sender-abuse.js';

const HOUR_MS = 3_600_000;
/** The window of `abuse.delist_per_day`. */
export const DELIST_WINDOW_MS = 24 * HOUR_MS;

/** One occurrence of an alert condition for a sender identity (mta/jobs/alert-monitors.ts decides what fires). */
export interface AlertTrigger {
  condition: AlertCondition;
  /** The (sub-)account whose identity it is. */
  accountId: number;
  senderId: string;
  /**
   * The message behind it, when one message is; `auth` is how it was submitted (the SMTP AUTH user, or
   * `api-key:<id>` for a REST send), which names the alert's originator (filters/outbound-verdicts.ts alertOriginator).
   */
  message?: { messageId: string; sendRequestId: string; envelopeSender: string; ip: string | null; auth: string | null };
  at: number;
}

/** Receives alert triggers; resolves once they are stored. A failed alert never fails a send (it is logged). */
export type AlertSink = (trigger: AlertTrigger) => unknown;

/** The message a scan verdict belongs to, as abuse control records it. */
export interface ScannedMessage {
  accountId: number;
  messageId: string;
  sendRequestId: string;
  mailFrom: string;
  upstream: string | null;
  /** The SMTP AUTH user of a submission, `api-key:<id>` for a REST send. */
  auth: string | null;
}

export type RemediationResult =
  | { ok: true; accountId: number; senderId: string; envelopeSender: string }
  | { ok: false; reason: 'not-found' }
  | { ok: false; reason: 'rate-limited'; senderId: string; used: number };

export interface SenderAbuseDeps {
  store: SenderAbuseStore;
  accounts: Pick<AccountStore, 'findById'>;
  config: Pick<Config, 'filters' | 'abuse'>;
  now: () => number;
  logger: Logger;
  /** The sender identity and envelope sender of a logged message of one of `accountIds` (the SMTP log). */
  senderOfMessage: (accountIds: readonly number[], messageId: string) => Promise<{ accountId: number; senderId: string; sender: string } | undefined>;
}

/** Creates abuse control. `onAlert` is set once the alert monitors are wired (they sit above the send recipe). */
export function createSenderAbuse(deps: SenderAbuseDeps) {
  const log = deps.logger.child({ component: 'abuse' });
  let sink: AlertSink | undefined;
  const alert = async (t: AlertTrigger): Promise<void> => {
    try {
      await sink?.(t);
    } catch (err) {
      log.error({ err, condition: t.condition, senderId: t.senderId }, 'alert trigger failed');
    }
  };

  /** The identity's block while it is blocked. */
  const activeBlock = async (accountId: number, senderId: string): Promise<SenderBlockRow | undefined> => {
    const b = await deps.store.findBlock(accountId, senderId);
    return b && b.lifted_at === null ? b : undefined;
  };

  return {
    /**
     * Retention (`retention.alert_days`): deletes up to `limit` strikes and delistings older than `before`, but never
     * one that still counts — a strike inside `abuse.block_window_hours`, a delisting inside the day the API's
     * delisting limit looks at — whatever `before` says. Returns how many.
     */
    prune(before: number, limit: number): Promise<number> {
      const stillCounting = deps.now() - Math.max(deps.config.abuse.blockWindowHours * HOUR_MS, DELIST_WINDOW_MS);
      return deps.store.prune(Math.min(before, stillCounting), limit);
    },

    onAlert(fn: AlertSink): void {
      sink = fn;
    },

    /** Raises a trigger found elsewhere (delivery outcomes) through the same sink. */
    alert,

    /** The policy for `account`: its own, else its parent's, else `filters.outbound_policy`. */
    async policyOf(account: AccountRow): Promise<ScanPolicy> {
      const own = await deps.store.scanPolicy(account.id);
      if (own) return own;
      const inherited = account.parent_id === null ? undefined : await deps.store.scanPolicy(account.parent_id);
      return inherited ?? deps.config.filters.outboundPolicy;
    },

    activeBlock,

    /** The blocks in force for `accountIds`, newest first per account (the console's sender blocks view). */
    activeBlocks(accountIds: readonly number[]): Promise<SenderBlockRow[]> {
      return deps.store.activeBlocks(accountIds);
    },

    /** Every blocked identity of `accountIds`, as `<account id>:<sender id>` keys (log search: DELIST). */
    async blockedIdentities(accountIds: readonly number[]): Promise<Set<string>> {
      return new Set((await deps.store.activeBlocks(accountIds)).map((b) => `${b.account_id}:${b.sender_id}`));
    },

    /**
     * After a scanned message was queued or refused: a CONFIRMED or SUSPECT grade is a strike, counted over
     * `abuse.block_window_hours` (a delisting forgives the strikes before it); reaching `abuse.block_confirmed` /
     * `abuse.block_suspect` blocks it — except under the `monitor` policy, which blocks nothing. Raises
     * `sender_id_sending_spam` (SUSPECT or CONFIRMED spam), `sender_id_sending_virus` (any virus grade) and
     * `sender_id_blocked`. Resolves, once the strike and any block and alert are stored, with whether this message
     * blocked the identity. The strike, the count and the block are separate units: two strikes at once both count,
     * and the block is written once (a block already in force is kept as it is).
     */
    async afterScan(msg: ScannedMessage, verdict: OutboundScanVerdict): Promise<{ blocked: boolean }> {
      if (verdict.policy === 'off') return { blocked: false };
      const at = deps.now();
      const { senderId } = verdict;
      const message = { messageId: msg.messageId, sendRequestId: msg.sendRequestId, envelopeSender: msg.mailFrom, ip: msg.upstream, auth: msg.auth };
      const kind = strikeOf(verdict.spam.disposition, verdict.virus.disposition);
      let blocked = false;
      if (kind) {
        const a = deps.config.abuse;
        await deps.store.insertStrike(msg.accountId, senderId, kind, msg.messageId, at);
        if (verdict.policy === 'enforce' && !(await activeBlock(msg.accountId, senderId))) {
          const decided = decideBlock(await deps.store.countStrikes(msg.accountId, senderId, at - a.blockWindowHours * HOUR_MS), {
            confirmed: a.blockConfirmed,
            suspect: a.blockSuspect,
            windowHours: a.blockWindowHours,
          });
          blocked = decided.block
            ? await deps.store.insertBlock({ accountId: msg.accountId, senderId, envelopeSender: msg.mailFrom, messageId: msg.messageId, reason: decided.reason, at })
            : false;
        }
      }
      if (verdict.spam.disposition === 'CONFIRMED' || verdict.spam.disposition === 'SUSPECT') {
        await alert({ condition: 'sender_id_sending_spam', accountId: msg.accountId, senderId, message, at });
      }
      if (verdict.virus.disposition !== 'UNKNOWN') await alert({ condition: 'sender_id_sending_virus', accountId: msg.accountId, senderId, message, at });
      if (blocked) {
        log.warn({ accountId: msg.accountId, senderId, messageId: msg.messageId }, 'sender identity blocked');
        await alert({ condition: 'sender_id_blocked', accountId: msg.accountId, senderId, message, at });
      }
      return { blocked };
    },

    /**
     * POST /outbound/v1/remediation: lifts the block of the identity behind `messageId` (wins) or the envelope
     * `sender`, among `accountIds`. `not-found` when nothing matching is blocked; `rate-limited` when the identity was
     * already delisted `abuse.delist_per_day` times through the API within 24 hours (only the operator may then).
     */
    async remediate(accountIds: readonly number[], target: { messageId?: string | undefined; sender?: string | undefined }): Promise<RemediationResult> {
      let candidates: { accountId: number; senderId: string; envelopeSender: string }[];
      if (target.messageId !== undefined) {
        const found = await deps.senderOfMessage(accountIds, target.messageId);
        candidates = found ? [{ accountId: found.accountId, senderId: found.senderId, envelopeSender: found.sender }] : [];
      } else {
        candidates = (await deps.store.activeBlocksFor(accountIds, target.sender ?? '')).map((b) => ({
          accountId: b.account_id,
          senderId: b.sender_id,
          envelopeSender: target.sender ?? b.envelope_sender,
        }));
      }
      let c: (typeof candidates)[number] | undefined;
      for (const x of candidates) {
        if (await activeBlock(x.accountId, x.senderId)) {
          c = x;
          break;
        }
      }
      if (!c) return { ok: false, reason: 'not-found' };
      const now = deps.now();
      // The count and the lift in one unit: the daily limit holds across nodes answering at once (issue 33).
      const done = await deps.store.delist(c.accountId, c.senderId, now, { max: deps.config.abuse.delistPerDay, since: now - DELIST_WINDOW_MS });
      if (!done.ok) return done.reason === 'rate-limited' ? { ok: false, reason: 'rate-limited', senderId: c.senderId, used: done.used } : { ok: false, reason: 'not-found' };
      log.info({ accountId: c.accountId, senderId: c.senderId }, 'sender identity delisted');
      return { ok: true, ...c };
    },

    /** `sluice senders unblock`: the operator lifts a block, whatever the API's delisting count. */
    unblock(accountId: number, senderId: string): Promise<boolean> {
      return deps.store.lift(accountId, senderId, 'operator', deps.now());
    },
  };
}

export type SenderAbuse = ReturnType<typeof createSenderAbuse>;
