// Owns the Suppressions port: recipients an account must not mail, by source and by mail type.
import type { NewEvent } from './events.js';

/** How an entry got on the list (the wire's `source`). */
export type SuppressionSource = 'api' | 'unsubscribe_link' | 'list_unsubscribe' | 'hard_bounce' | 'spam_complaint';

/** What a late report notes on a delivery's SMTP log row: the command that brought it (`ARF`) and its text. */
export interface LogNote {
  deliveryId: number;
  lastcmd: string;
  rspmsg: string;
}

/** Sources the queue and the unsubscribe endpoints add by themselves (everything but `api`). */
export type EventSuppressionSource = Exclude<SuppressionSource, 'api'>;

/** One stored entry. */
export interface SuppressionRow {
  id: number;
  account_id: number;
  recipient: string;
  source: SuppressionSource;
  /** The entry stops transactional mail. */
  transactional: boolean;
  /** The entry stops non-transactional (bulk) mail. */
  non_transactional: boolean;
  notes: string | null;
  sender: string | null;
  created_at: number;
}

/** An entry to insert; `recipient` may be in any case, the store lower-cases it. */
export interface NewSuppression {
  accountId: number;
  recipient: string;
  source: SuppressionSource;
  transactional: boolean;
  nonTransactional: boolean;
  notes: string | null;
  sender: string | null;
}

/** List filters: `createdBefore` is exclusive, `createdAfter` inclusive (ms); recipient compares case-insensitively. */
export interface SuppressionFilters {
  recipient?: string;
  source?: SuppressionSource;
  createdBefore?: number;
  createdAfter?: number;
  limit: number;
  offset: number;
}

/**
 * Stored lower-cased: addresses compare case-insensitively for suppression (operators expect it; RFC 5321 §2.4 lets
 * the receiving host decide, and in practice mailboxes are case-insensitive).
 */
export function normaliseRecipient(address: string): string {
  return address.trim().toLowerCase();
}

/**
 * What an entry added by an event suppresses. A hard bounce means the mailbox does not exist: all mail. An
 * unsubscribe (link or RFC 8058 List-Unsubscribe) withdraws consent to bulk mail only; receipts and password resets
 * must still arrive. A spam complaint is treated like a hard bounce: mailbox providers judge the sender on
 * complaints of any kind.
 */
export function eventSuppression(accountId: number, recipient: string, source: EventSuppressionSource, sender: string | null): NewSuppression {
  const all = source === 'hard_bounce' || source === 'spam_complaint';
  return { accountId, recipient, source, transactional: all, nonTransactional: true, notes: null, sender };
}

/** Entries one account holds unless told otherwise (the default of accounts.max_suppressions). */
export const DEFAULT_MAX_SUPPRESSIONS = 100_000;

/** The suppression list; every method is scoped by account id (tenancy). */
export interface SuppressionStore {
  /**
   * Inserts every entry or none: `{ok:false, duplicate}` names the first recipient already present for its account
   * and source (or repeated within the request); `{ok:false, full}` names an account that would then hold more than
   * `maxPerAccount` entries (default DEFAULT_MAX_SUPPRESSIONS). Either way nothing is stored.
   */
  insertMany(entries: NewSuppression[], now: number, maxPerAccount?: number): Promise<{ ok: true } | { ok: false; duplicate: string } | { ok: false; full: number }>;
  /**
   * Adds the `eventSuppression` entry of a queue or unsubscribe event; false (the existing row untouched) when the
   * recipient already has an entry of that source. Never refused for the bound: a new entry when the account holds
   * `maxPerAccount` (default DEFAULT_MAX_SUPPRESSIONS) replaces the account's oldest hard-bounce entry in the same
   * unit; with none, the list goes over the bound (an unsubscription or complaint is never lost).
   */
  addFromEvent(accountId: number, recipient: string, source: EventSuppressionSource, sender: string | null, now: number, maxPerAccount?: number): Promise<boolean>;
  /**
   * An unsubscription (RFC 8058 one-click or the link's page) in one unit: adds the `eventSuppression` entry (past
   * `maxPerAccount` as addFromEvent) and, only when it was not there yet, appends `event` (`unsubscribed`) with its
   * roll-up, and sets `logNote`'s command and text on the SMTP log row of its delivery (a complaint about a delivered
   * message: the log search shows it, its code and delivered flag kept). Returns whether it was added; repeating it is
   * harmless.
   */
  unsubscribe(u: { accountId: number; recipient: string; source: EventSuppressionSource; now: number; event: NewEvent; maxPerAccount?: number; logNote?: LogNote }): Promise<boolean>;
  /** True when the account has an entry for `recipient` with this source. */
  exists(accountId: number, recipient: string, source: SuppressionSource): Promise<boolean>;
  /** The account's entries matching `f`, newest first (ties by id, newest first), paged by limit/offset. */
  list(accountId: number, f: SuppressionFilters): Promise<SuppressionRow[]>;
  /** Deletes a recipient's entry of one source, or of every source; returns how many. */
  delete(accountId: number, recipient: string, source: SuppressionSource | 'all'): Promise<number>;
  /**
   * The oldest entry of any of `accountIds` that suppresses `recipient` for this kind of mail, or undefined. An entry
   * stops transactional mail only when its `transactional` flag is set, non-transactional mail only when its
   * `non_transactional` flag is set. The caller decides which accounts count.
   */
  isSuppressed(accountIds: number[], recipient: string, transactional: boolean): Promise<SuppressionRow | undefined>;
}
