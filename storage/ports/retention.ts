// Owns the retention port: bounded deletes of old message bodies, finished messages and SMTP log rows.

/**
 * Where a walk over messages stands: the creation time and id of the last message a batch looked at. Walks go in
 * (created_at, id) order, never by id alone: on PostgreSQL an id is taken at insert, not at commit, so ids say
 * nothing about which rows a reader can already see; a message's creation time, far behind the cutoff, does.
 */
export interface WalkCursor {
  createdAt: number;
  id: number;
}

/** One batch of a cursor walk: what it deleted and where the next batch of the same run starts. */
export interface WalkBatch {
  /** Rows deleted by this batch. */
  deleted: number;
  /** Pass as `after` to the next batch of the same run (rows up to here were looked at); unchanged when none were. */
  next: WalkCursor | undefined;
  /** True when nothing older than the cutoff is left past `next`: the run can stop this walk. */
  done: boolean;
}

/** One batch of an id walk over a set no write can add to behind the cursor (deleted sub-accounts, models). */
export interface PruneBatch {
  /** Rows deleted by this batch. */
  deleted: number;
  /** Pass as `afterId` to the next batch of the same run (rows up to here were looked at). */
  lastId: number;
  /** True when nothing is left past `lastId`: the run can stop this walk. */
  done: boolean;
}

/** Arguments of a cursor walk batch. */
export interface WalkArgs {
  /** Cutoff (ms): only messages created, and finished, strictly before it are deleted. */
  before: number;
  /** Start after this position (undefined for the first batch of a run). */
  after?: WalkCursor;
  /** Rows looked at (and so at most deleted) in this batch. */
  limit: number;
}

/**
 * Retention deletes. Each call is one short unit over a bounded number of rows, so a run made of many calls never
 * holds up the queue's commits. None ever deletes what a delivery still needs: a message with a delivery queued
 * (also deferred), sending or held keeps its row, body and log rows (ARCHITECTURE invariant 6).
 */
export interface RetentionStore {
  /** Deletes up to `limit` idempotency keys expired at `now` (issue 36: api.idempotency_ttl_hours); returns how many. */
  pruneIdempotencyKeys(now: number, limit: number): Promise<number>;
  /**
   * Deletes the bodies of messages created before `before` whose every delivery is final (delivered, bounced or
   * dropped) and became final before `before`. Looks at up to `limit` bodies after `after`, and stops early once it
   * has freed `maxBytes` (default 64 MiB) of bodies. Message and delivery rows stay.
   */
  pruneBodies(a: WalkArgs & { maxBytes?: number }): Promise<WalkBatch>;
  /**
   * Deletes messages created before `before` whose every delivery is final and became final before `before`, with
   * their body, deliveries and delivery attempts. Looks at up to `limit` messages after `after`. Log rows stay.
   */
  pruneMessages(a: WalkArgs): Promise<WalkBatch>;
  /**
   * Deletes up to `limit` SMTP log rows created before `before` whose delivery is final or already gone; rows of a
   * queued (also deferred), sending or held delivery stay however old. Fewer than `limit` means none are left now.
   */
  pruneLogRows(before: number, limit: number): Promise<number>;
}
