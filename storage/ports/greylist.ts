// Owns the port of greylisting's memory: triplets and client networks as plain records, whatever backend keeps
// them (storage/sqlite/greylist.ts today).

/** (client network, envelope sender, recipient): RFC 6647 §4's triplet. */
export interface Triplet {
  /** The client's /24 (IPv4) or /64 (IPv6) in text form, e.g. `192.0.2.0/24`. */
  network: string;
  /** Lower-case envelope sender, '' for the null sender. */
  sender: string;
  /** Lower-case recipient. */
  recipient: string;
}

export interface TripletRecord {
  firstSeen: number;
  lastSeen: number;
  /** When a retry after the delay was let through; null while it waits. */
  passedAt: number | null;
}

export interface GreylistStore {
  find(t: Triplet): Promise<TripletRecord | undefined>;
  /** Writes the triplet's record (insert or replace). */
  save(t: Triplet, r: TripletRecord): Promise<void>;
  /** Retries the network passed (each triplet counts once, when it first passes) and the last one's time. */
  client(network: string): Promise<{ passes: number; lastPassAt: number } | undefined>;
  /** Counts one more passed triplet for `network`. */
  countPass(network: string, now: number): Promise<void>;
  /**
   * Writes a first attempt's record (insert or replace) unless `t.network` already has `cap.max` triplets first seen
   * since `cap.since` that still wait for their retry; returns whether it was written. One unit of work: two processes
   * never both take the network's last place.
   */
  saveFirst(t: Triplet, r: TripletRecord, cap: { max: number; since: number }): Promise<boolean>;
  /**
   * Forgets up to `limit` rows in one short unit: triplets never retried that were first seen before
   * `c.unretriedBefore` first, then triplets not seen since `c.seenBefore`, then networks whose last pass is older
   * than `c.clientsBefore`. Returns how many; fewer than `limit` means nothing old is left (the caller repeats, a
   * batch at a time, as retention's prunes do).
   */
  prune(c: PruneCutoffs, limit: number): Promise<number>;
}

/** What a prune forgets: times before which each kind of row can no longer matter. */
export interface PruneCutoffs {
  /** A triplet never retried and first seen before this is past its retry window. */
  unretriedBefore: number;
  /** A triplet (passed or not) not seen since this. */
  seenBefore: number;
  /** A client network whose last pass is older than this. */
  clientsBefore: number;
}
