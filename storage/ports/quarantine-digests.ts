// Owns the quarantine digests port (issue 37): which domains have digests on and when the digest job last went
// through each one's held mail, and when each address last got a digest.
import type { DigestInterval } from './inbound-domains.js';

/** One domain with digests on, as the digest job walks them. */
export interface DigestDomainRow {
  domain_id: number;
  account_id: number;
  /** The provisioned domain's name (lower-case A-label). */
  domain: string;
  interval: Exclude<DigestInterval, 'off'>;
  /** The domain's admins get a digest of the whole domain. */
  admins: boolean;
  /** When the job last went through the domain's held mail (a round); null before its first. */
  round_at: number | null;
}

/** The length of a digest interval in milliseconds. */
export const DIGEST_INTERVAL_MS: Readonly<Record<Exclude<DigestInterval, 'off'>, number>> = {
  hourly: 3_600_000,
  daily: 86_400_000,
  weekly: 7 * 86_400_000,
};

/**
 * Digest bookkeeping. A domain's rows go with the domain. Addresses are lower case; every method is one unit.
 */
export interface QuarantineDigestStore {
  /** Up to `limit` domains with digests on (any account), by id, after `afterId` (0: from the first). */
  digestDomains(afterId: number, limit: number): Promise<DigestDomainRow[]>;
  /** Records that a round of domain `domainId` went through its held mail at `at`. */
  markRound(domainId: number, at: number): Promise<void>;
  /** When each of `addresses` last got a digest of domain `domainId`; an address that never did is absent. */
  sentTo(domainId: number, addresses: readonly string[]): Promise<Map<string, number>>;
  /** Records that `address` got a digest of domain `domainId` at `at` (committed after the digest was queued). */
  markSent(domainId: number, address: string, at: number): Promise<void>;
  /**
   * Retention: deletes up to `limit` address records whose last digest is before `before` (inbound.quarantine_days
   * ago: every entry still held came after it, so the record would exclude nothing); returns how many. Without it
   * a domain whose spam names ever new addresses would keep a record of each forever.
   */
  pruneSent(before: number, limit: number): Promise<number>;
}
