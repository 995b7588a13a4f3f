// Owns the retention port: bounded deletes of old message bodies, finished messages and SMTP log rows.

/** One batch of a cursor walk: what it deleted and where the next batch of the same run starts. */
export interface PruneBatch {
  /** Rows deleted by this batch. */
  deleted: number;
  /** Pass as `afterId` to the next batch of the same run (rows up to here were looked at). */
  lastId: number;
  /** True when nothing older than the cutoff is left past `lastId`: the run can stop this walk. */
  done: boolean;
}

/** Arguments of a cursor walk batch. */
export interface WalkArgs {
  /** Cutoff (ms): only messages created, and finished, strictly before it are deleted. */
  before: number;
  /** Start after this id (0 for the first batch of a run). */
  afterId: number;
  /** Rows looked at (and so at most deleted) in this batch. */
  limit: number;
}

/**
 * Retention deletes. Each call is one short unit over a bounded number of rows, so a run made of many calls never
 * holds up the queue's commits. None ever deletes what a delivery still needs: a message with a delivery queued
 * (also deferred), sending or held keeps its row, body and log rows (ARCHITECTURE invariant 6).
 */
export interface RetentionStore {
  /**
   * Deletes the bodies of messages created before `before` whose every delivery is final (delivered, bounced or
   * dropped) and became final before `before`. Looks at up to `limit` bodies after `afterId`, and stops early once it
   * has freed `maxBytes` (default 64 MiB) of bodies. Message and delivery rows stay.
   */
  pruneBodies(a: WalkArgs & { maxBytes?: number }): Promise<PruneBatch>;
  /**
   * Deletes messages created before `before` whose every delivery is final and became final before `before`, with
   * their body, deliveries and delivery attempts. Looks at up to `limit` messages after `afterId`. Log rows stay.
   */
  pruneMessages(a: WalkArgs): Promise<PruneBatch>;
  /**
   * Deletes up to `limit` SMTP log rows created before `before` whose delivery is final or already gone; rows of a
   * queued (also deferred), sending or held delivery stay however old. Fewer than `limit` means none are left now.
   */
  pruneLogRows(before: number, limit: number): Promise<number>;
}
