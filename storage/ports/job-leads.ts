// Owns the JobLeads port: who runs a once-per-cluster job (retention, the body sweep, DKIM retirement) right now,
// as a lease on the job's name that its holder renews and that moves to another process when it lapses.

/**
 * One lead per job name, shared by every process on the store (every node on PostgreSQL). Times are the caller's
 * injected clock in ms, like every lease of the seam (ports/leases.ts).
 */
export interface JobLeadStore {
  /**
   * Takes or renews the lead on `job` for `owner` until `now + ttlMs`: true when `owner` holds it afterwards (it was
   * free, lapsed at `now`, already `owner`'s, or held by `replacing` — an owner the caller knows is dead), false
   * while another owner's lead runs. One atomic unit.
   */
  tryLead(job: string, owner: string, now: number, ttlMs: number, replacing?: string): Promise<boolean>;
  /** Who holds the lead on `job`, and until when (undefined when no one ever took it, or it was given up). */
  leader(job: string): Promise<{ owner: string; until: number } | undefined>;
  /** Gives up `owner`'s lead on `job` (a graceful stop), so another process takes it at its next try. */
  resign(job: string, owner: string): Promise<void>;
}
