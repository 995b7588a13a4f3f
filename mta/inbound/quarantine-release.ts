// Owns releasing a quarantined inbound message: relay it exactly once, however many releases race for it.
import type { StepVerdict } from '../../filters/inbound-verdicts.js';
import type { QuarantineRow, QuarantineStore } from '../../storage/ports/quarantine.js';
import type { InboundRelay } from './pipeline.js';

export type ReleaseResult =
  | { ok: true; row: QuarantineRow }
  | { ok: false; reason: 'not-found' | 'released' | 'in-progress' | 'domain-gone' | 'relay-failed' };

/**
 * Releases quarantined message `id` of `accountId` (null: the operator, any account): takes the release lease,
 * relays the stored message to the recipients it was held for, then marks it released. A second release answers
 * 'released' (the API's 409); one racing the first answers 'in-progress'. When the relay fails (not committed) the
 * lease is given back and the message stays held. A crash between the relay's commit and the mark leaves the lease
 * to expire, after which a new release may relay it again: at-least-once, never zero.
 */
export async function releaseQuarantined(
  deps: { store: Pick<QuarantineStore, 'claimRelease' | 'abortRelease' | 'finishRelease'>; relay: InboundRelay; now: () => number },
  accountId: number | null,
  id: number,
): Promise<ReleaseResult> {
  const claim = await deps.store.claimRelease(accountId, id, deps.now());
  if (!claim.ok) return claim;
  const { row, raw } = claim;
  if (row.domain_id === null) {
    await deps.store.abortRelease(row.id, row.release_started_at as number);
    return { ok: false, reason: 'domain-gone' };
  }
  try {
    await deps.relay({
      mailFrom: row.mail_from,
      rcptTo: JSON.parse(row.rcpt_to) as string[],
      raw,
      domainIds: [row.domain_id],
      queueId: row.queue_id,
      messageId: row.message_id,
      verdicts: JSON.parse(row.verdicts) as StepVerdict[],
    });
  } catch {
    await deps.store.abortRelease(row.id, row.release_started_at as number);
    return { ok: false, reason: 'relay-failed' };
  }
  await deps.store.finishRelease(row.id, deps.now());
  return { ok: true, row: { ...row, released_at: deps.now() } };
}
