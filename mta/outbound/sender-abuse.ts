// Owns what a sender identity's scanned mail does to it: the scanning policy that applies, strikes toward a block,
// the block itself, the alerts it raises, and delisting (the API's rate-limited, the operator's not).
import type { Logger } from 'pino';
import type { Config } from '../../config/load.js';
import type { ScanPolicy } from '../../config/keys.js';
import { decideBlock, type AlertCondition } from '../../filters/alert-conditions.js';
import { strikeOf, type OutboundScanVerdict } from '../../filters/outbound-verdicts.js';
import type { AccountRow, AccountStore } from '../../storage/sqlite/accounts.js';
import type { SenderAbuseStore, SenderBlockRow } from '../../storage/sqlite/sender-abuse.js';

const HOUR_MS = 3_600_000;
/** The window of `abuse.delist_per_day`. */
export const DELIST_WINDOW_MS = 24 * HOUR_MS;

/** One occurrence of an alert condition for a sender identity (mta/jobs/alert-monitors.ts decides what fires). */
export interface AlertTrigger {
  condition: AlertCondition;
  /** The (sub-)account whose identity it is. */
  accountId: number;
  senderId: string;
  /** The message behind it, when one message is. */
  message?: { messageId: string; sendRequestId: string; envelopeSender: string; ip: string | null };
  at: number;
}

/** Receives alert triggers; never throws into the caller (a failed alert must not fail a send). */
export type AlertSink = (trigger: AlertTrigger) => void;

/** The message a scan verdict belongs to, as abuse control records it. */
export interface ScannedMessage {
  accountId: number;
  messageId: string;
  sendRequestId: string;
  mailFrom: string;
  upstream: string | null;
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
  senderOfMessage: (accountIds: readonly number[], messageId: string) => { accountId: number; senderId: string; sender: string } | undefined;
}

/** Creates abuse control. `onAlert` is set once the alert monitors are wired (they sit above the send recipe). */
export function createSenderAbuse(deps: SenderAbuseDeps) {
  const log = deps.logger.child({ component: 'abuse' });
  let sink: AlertSink | undefined;
  const alert = (t: AlertTrigger) => {
    try {
      sink?.(t);
    } catch (err) {
      log.error({ err, condition: t.condition, senderId: t.senderId }, 'alert trigger failed');
    }
  };

  /** The identity's block while it is blocked. */
  const activeBlock = (accountId: number, senderId: string): SenderBlockRow | undefined => {
    const b = deps.store.findBlock(accountId, senderId);
    return b && b.lifted_at === null ? b : undefined;
  };

  return {
    onAlert(fn: AlertSink): void {
      sink = fn;
    },

    /** Raises a trigger found elsewhere (delivery outcomes) through the same sink. */
    alert,

    /** The policy for `account`: its own, else its parent's, else `filters.outbound_policy`. */
    policyOf(account: AccountRow): ScanPolicy {
      const own = deps.store.scanPolicy(account.id);
      if (own) return own;
      const inherited = account.parent_id === null ? undefined : deps.store.scanPolicy(account.parent_id);
      return inherited ?? deps.config.filters.outboundPolicy;
    },

    activeBlock,

    /** The blocks in force for `accountIds`, newest first per account (the console's sender blocks view). */
    activeBlocks(accountIds: readonly number[]): SenderBlockRow[] {
      return deps.store.activeBlocks(accountIds);
    },

    /** Every blocked identity of `accountIds`, as `<account id>:<sender id>` keys (log search: DELIST). */
    blockedIdentities(accountIds: readonly number[]): Set<string> {
      return new Set(deps.store.activeBlocks(accountIds).map((b) => `${b.account_id}:${b.sender_id}`));
    },

    /**
     * After a scanned message was queued or refused: a CONFIRMED or SUSPECT grade is a strike, counted over
     * `abuse.block_window_hours` (a delisting forgives the strikes before it); reaching `abuse.block_confirmed` /
     * `abuse.block_suspect` blocks it — except under the `monitor` policy, which blocks nothing. Raises
     * `sender_id_sending_spam` (SUSPECT or CONFIRMED spam), `sender_id_sending_virus` (any virus grade) and
     * `sender_id_blocked`. Returns whether this message blocked the identity.
     */
    afterScan(msg: ScannedMessage, verdict: OutboundScanVerdict): { blocked: boolean } {
      if (verdict.policy === 'off') return { blocked: false };
      const at = deps.now();
      const { senderId } = verdict;
      const message = { messageId: msg.messageId, sendRequestId: msg.sendRequestId, envelopeSender: msg.mailFrom, ip: msg.upstream };
      const kind = strikeOf(verdict.spam.disposition, verdict.virus.disposition);
      let blocked = false;
      if (kind) {
        const a = deps.config.abuse;
        blocked = deps.store.transaction(() => {
          deps.store.insertStrike(msg.accountId, senderId, kind, msg.messageId, at);
          if (verdict.policy !== 'enforce') return false;
          if (activeBlock(msg.accountId, senderId)) return false;
          const decided = decideBlock(deps.store.countStrikes(msg.accountId, senderId, at - a.blockWindowHours * HOUR_MS), {
            confirmed: a.blockConfirmed,
            suspect: a.blockSuspect,
            windowHours: a.blockWindowHours,
          });
          return decided.block
            ? deps.store.insertBlock({ accountId: msg.accountId, senderId, envelopeSender: msg.mailFrom, messageId: msg.messageId, reason: decided.reason, at })
            : false;
        });
      }
      if (verdict.spam.disposition === 'CONFIRMED' || verdict.spam.disposition === 'SUSPECT') {
        alert({ condition: 'sender_id_sending_spam', accountId: msg.accountId, senderId, message, at });
      }
      if (verdict.virus.disposition !== 'UNKNOWN') alert({ condition: 'sender_id_sending_virus', accountId: msg.accountId, senderId, message, at });
      if (blocked) {
        log.warn({ accountId: msg.accountId, senderId, messageId: msg.messageId }, 'sender identity blocked');
        alert({ condition: 'sender_id_blocked', accountId: msg.accountId, senderId, message, at });
      }
      return { blocked };
    },

    /**
     * POST /outbound/v1/remediation: lifts the block of the identity behind `messageId` (wins) or the envelope
     * `sender`, among `accountIds`. `not-found` when nothing matching is blocked; `rate-limited` when the identity was
     * already delisted `abuse.delist_per_day` times through the API within 24 hours (only the operator may then).
     */
    remediate(accountIds: readonly number[], target: { messageId?: string | undefined; sender?: string | undefined }): RemediationResult {
      let candidates: { accountId: number; senderId: string; envelopeSender: string }[];
      if (target.messageId !== undefined) {
        const found = deps.senderOfMessage(accountIds, target.messageId);
        candidates = found ? [{ accountId: found.accountId, senderId: found.senderId, envelopeSender: found.sender }] : [];
      } else {
        candidates = deps.store
          .activeBlocksFor(accountIds, target.sender ?? '')
          .map((b) => ({ accountId: b.account_id, senderId: b.sender_id, envelopeSender: target.sender ?? b.envelope_sender }));
      }
      const c = candidates.find((x) => activeBlock(x.accountId, x.senderId));
      if (!c) return { ok: false, reason: 'not-found' };
      const now = deps.now();
      const used = deps.store.countDelistings(c.accountId, c.senderId, 'api', now - DELIST_WINDOW_MS);
      if (used >= deps.config.abuse.delistPerDay) {
        return { ok: false, reason: 'rate-limited', senderId: c.senderId, used };
      }
      if (!deps.store.lift(c.accountId, c.senderId, 'api', now)) return { ok: false, reason: 'not-found' };
      log.info({ accountId: c.accountId, senderId: c.senderId }, 'sender identity delisted');
      return { ok: true, ...c };
    },

    /** `sluice senders unblock`: the operator lifts a block, whatever the API's delisting count. */
    unblock(accountId: number, senderId: string): boolean {
      return deps.store.lift(accountId, senderId, 'operator', deps.now());
    },
  };
}

export type SenderAbuse = ReturnType<typeof createSenderAbuse>;
