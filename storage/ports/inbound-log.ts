// Owns the inbound log port: one row per inbound message × recipient (relayed, flagged, quarantined, refused or
// deferred, at RCPT or at DATA) with the reply given, the reason and each filtering step, and its search.

/** What happened to one recipient of an inbound message (a 4xx at RCPT or DATA is `deferred`, a 5xx `refused`). */
export const INBOUND_VERDICTS = ['relayed', 'flagged', 'quarantined', 'refused', 'deferred'] as const;
export type InboundVerdict = (typeof INBOUND_VERDICTS)[number];

/** Where the decision was made: at RCPT TO (the message was never taken in) or at the end of DATA. */
export type InboundStage = 'rcpt' | 'data';

/** A row as the MX writes it. */
export interface NewInboundLogRow {
  /** The served domain's account; null for a recipient refused before any served domain was found (relay denied). */
  account_id: number | null;
  /** The provisioned domain (an alias counts as its domain), lower case; the recipient's own domain when none. */
  domain: string;
  /** The id of the `250 … queued as` reply and the log lines; null at RCPT (no message yet). */
  queue_id: string | null;
  stage: InboundStage;
  client_ip: string;
  /** The EHLO/HELO name, '' if none. */
  helo: string;
  /** Envelope sender as given ('' for the null sender). */
  sender: string;
  rcpt: string;
  subject: string | null;
  /** The Message-ID header without <>, or null. */
  message_id: string | null;
  /** Bytes of the message; null at RCPT. */
  size: number | null;
  verdict: InboundVerdict;
  /** The decision's stable kebab-case reason (`abuse-policy-quarantine`, `relay-denied`, `greylisted`…). */
  reason: string;
  /** The spam score of the recipient's account, when one was computed. */
  score: number | null;
  /** The reply the client got for this recipient (`550 5.7.1 …`; for DATA, the reply to DATA). */
  reply: string;
  /** The verdict record of each step that concerned this recipient (filters/inbound-verdicts.ts), in order. */
  steps: unknown[];
  created_at: number;
}

/** A stored row, with what became of it later: the quarantine entry it is held in and the downstream's reply. */
export interface InboundLogRow extends NewInboundLogRow {
  id: number;
  /** The quarantine entry holding it (a quarantined recipient), or null. */
  quarantine_id: number | null;
  /** When that entry was released (relayed once), or null. */
  released_at: number | null;
  /** The relay to the domain's downstream servers (a relayed or flagged recipient) while its delivery is kept. */
  relay: {
    /** The delivery's state (queued, sending, delivered, bounced, dropped, held). */
    state: string;
    attempts: number;
    /** The downstream's latest reply: code, enhanced status, text, and the host that gave it. */
    code: number | null;
    status: string | null;
    response: string | null;
    host: string | null;
    updated_at: number;
  } | null;
}

/**
 * Search filters; all optional except the time range. `sender` and `rcpt` match exactly but ASCII
 * case-insensitively; `subject` is an ASCII case-insensitive substring; the others match exactly.
 */
export interface InboundLogFilters {
  sender?: string | undefined;
  rcpt?: string | undefined;
  subject?: string | undefined;
  clientIp?: string | undefined;
  messageId?: string | undefined;
  queueId?: string | undefined;
  verdict?: InboundVerdict | undefined;
  /** A provisioned domain (lower case A-label): a domain admin's searches are pinned to theirs. */
  domain?: string | undefined;
  /** created_at lower bound, inclusive (ms). */
  since: number;
  /** created_at upper bound, exclusive (ms). */
  until: number;
}

/** Whose rows a search may see (ARCHITECTURE invariant 5). */
export interface InboundLogScope {
  /** One account; null is the operator: every account, and rows of no account (refused before a served domain). */
  accountId: number | null;
  /** Hide rows of domains bound (associate-key) to another API key than this one; absent or null: no such filter. */
  keyId?: number | null | undefined;
}

export interface InboundLogPage {
  startAt: number;
  count: number;
}

/**
 * The inbound log. Rows of accepted mail are written by the unit that commits the message (the Queue port's accept
 * for relayed mail, the Quarantine port's insert for quarantined mail: no commit of their own); rows of refused or
 * deferred mail by `record`.
 */
export interface InboundLogStore {
  /**
   * Stores rows of mail the MX did not take in (refused or deferred), as a unit that waits for the next group
   * commit instead of starting one of its own while other commits are coming (SQLite: commit-batcher.ts
   * runDeferrable; PostgreSQL: group-commit.ts). Resolves once durable.
   */
  record(rows: readonly NewInboundLogRow[]): Promise<void>;
  /**
   * Rows in `scope` matching every filter, newest first (created_at DESC, then the later row first), skipping
   * `page.startAt` and returning at most `page.count`.
   */
  search(scope: InboundLogScope, filters: InboundLogFilters, page: InboundLogPage): Promise<InboundLogRow[]>;
  /** Retention (retention.log_days): deletes up to `limit` rows created before `before`; returns how many. */
  prune(before: number, limit: number): Promise<number>;
  /**
   * Rows per verdict created in [since, until) (the console's overview: today's filter verdicts), of `accountIds`
   * (null: every account and rows of none). Every verdict is present, 0 when it had no row.
   */
  verdictCounts(accountIds: readonly number[] | null, since: number, until: number): Promise<Record<InboundVerdict, number>>;
}

/** Every verdict at 0: what verdictCounts fills in. */
export function zeroVerdicts(): Record<InboundVerdict, number> {
  return Object.fromEntries(INBOUND_VERDICTS.map((v) => [v, 0])) as Record<InboundVerdict, number>;
}
