// Owns what an operator or a user does to a quarantined inbound message: release it (relay exactly once, however
// many releases race for it; the classifier learns it as ham) or delete it (as spam: the classifier learns it).
import type { BayesClassifier } from '../../filters/bayes.js';
import type { StepVerdict } from '../../filters/inbound-verdicts.js';
import type { LearnOutcome } from '../../storage/ports/bayes.js';
import type { QuarantineRow, QuarantineStore } from '../../storage/ports/quarantine.js';
import { bufferSource, readPartStart, type MessageSource } from '../../storage/message-source.js';
import { LEARN_SAMPLE_BYTES } from '../message-content.js';
import type { InboundRelay } from './pipeline.js';

export type ReleaseResult =
  /** `row` as it now stands: released, or (a release for some recipients) held for the others. */
  | { ok: true; row: QuarantineRow; learned?: LearnOutcome | 'failed' }
  | { ok: false; reason: 'not-found' | 'released' | 'in-progress' | 'domain-gone' | 'relay-failed' };

/** What releasing and deleting need; `bayes` present: the decision trains the message's account's model. */
export interface QuarantineActionDeps {
  store: QuarantineStore;
  relay: InboundRelay;
  now: () => number;
  bayes?: Pick<BayesClassifier, 'prepare' | 'learn' | 'correct'> | undefined;
}

/**
 * Teaches the account's model what a person decided about a quarantined message. After the decision is committed,
 * so a failure here never undoes it; reported as 'failed' for the caller to log.
 */
async function learnDecision(deps: QuarantineActionDeps, accountId: number, body: MessageSource, cls: 'spam' | 'ham'): Promise<LearnOutcome | 'failed' | undefined> {
  if (!deps.bayes) return undefined;
  try {
    // The classifier judged a sample (header section + SAMPLE_BODY_BYTES of body); it learns from as much, read
    // from storage, never the whole of a large quarantined message in memory.
    const raw = await readPartStart({ source: body }, LEARN_SAMPLE_BYTES);
    const item = await deps.bayes.prepare(raw, cls);
    const [outcome] = await deps.bayes.learn(accountId, [item], deps.now());
    // The global model learns no account's decision, but where it learned this message itself (autolearn) the
    // correction moves that record too.
    await deps.bayes.correct(null, [item], deps.now());
    return outcome;
  } catch {
    return 'failed';
  }
}

/**
 * Releases quarantined message `id` of `accountId` (null: the operator, any account): takes the release lease,
 * relays the stored message to the recipients it was held for, then marks it released, and the classifier learns
 * it as ham for the message's account (a release says "this is wanted mail"). A second release answers 'released'
 * (the API's 409); one racing the first answers 'in-progress'. When the relay fails (not committed) the lease is
 * given back and the message stays held. A crash between the relay's commit and the mark leaves the lease to
 * expire, after which a new release may relay it again: at-least-once, never zero.
 *
 * `only` releases it for some of its recipients (a quarantine digest's link acts for its one recipient): those
 * are relayed to and taken off the message, which stays held for the others under the same lease and retention;
 * 'not-found' when none of its recipients is one of them (any more). When they are all of its recipients, it is
 * the whole release above.
 */
export async function releaseQuarantined(
  deps: QuarantineActionDeps,
  accountId: number | null,
  id: number,
  only?: (rcpt: string) => boolean,
): Promise<ReleaseResult> {
  const claim = await deps.store.claimRelease(accountId, id, deps.now());
  if (!claim.ok) return claim;
  const { row, body } = claim;
  const startedAt = row.release_started_at as number;
  const rcptTo = only ? row.rcpt_to.filter(only) : row.rcpt_to;
  if (rcptTo.length === 0 || row.domain_id === null) {
    await deps.store.abortRelease(row.id, startedAt);
    return { ok: false, reason: rcptTo.length === 0 ? 'not-found' : 'domain-gone' };
  }
  try {
    await deps.relay({
      mailFrom: row.mail_from,
      rcptTo,
      message: body,
      domainIds: [row.domain_id],
      queueId: row.queue_id,
      messageId: row.message_id,
      verdicts: row.verdicts as StepVerdict[],
    });
  } catch {
    await deps.store.abortRelease(row.id, startedAt);
    return { ok: false, reason: 'relay-failed' };
  }
  const partial = rcptTo.length < row.rcpt_to.length;
  // Relayed to some: they leave the message, the lease is given back in the same unit (held for the others).
  if (partial) await deps.store.dropRecipients(row.id, rcptTo, deps.now(), startedAt);
  else await deps.store.finishRelease(row.id, deps.now());
  const learned = await learnDecision(deps, row.account_id, body, 'ham');
  const after = partial
    ? { ...row, rcpt_to: row.rcpt_to.filter((r) => !rcptTo.includes(r)), release_started_at: null }
    : { ...row, released_at: deps.now() };
  return { ok: true, row: after, ...(learned ? { learned } : {}) };
}

export type DeleteResult = { ok: true; learned?: LearnOutcome | 'failed' } | { ok: false; reason: 'not-found' | 'in-progress' };

/**
 * Deletes quarantined message `id` of `accountId` (null: any account); with `asSpam` the classifier first reads
 * it and, once it is deleted, learns it as spam for the message's account. 'in-progress' while a release holds it.
 * `only`: for those of its recipients alone, as releaseQuarantined's (the classifier learns nothing then).
 */
export async function deleteQuarantined(
  deps: QuarantineActionDeps,
  accountId: number | null,
  id: number,
  opts: { asSpam: boolean; only?: (rcpt: string) => boolean },
): Promise<DeleteResult> {
  const row = await deps.store.find(accountId, id);
  if (!row) return { ok: false, reason: 'not-found' };
  // For some of its recipients (a digest's link): they leave it; it stays held for the others.
  const mine = opts.only ? row.rcpt_to.filter(opts.only) : row.rcpt_to;
  if (mine.length === 0) return { ok: false, reason: 'not-found' };
  if (mine.length < row.rcpt_to.length) {
    return (await deps.store.dropRecipients(row.id, mine, deps.now(), null)) ? { ok: true } : { ok: false, reason: 'in-progress' };
  }
  // Read before the delete (which removes the body); bounded as learnDecision reads it.
  const body = opts.asSpam ? await deps.store.body(accountId, id) : undefined;
  const raw = body ? await readPartStart({ source: body }, LEARN_SAMPLE_BYTES) : undefined;
  if (!(await deps.store.delete(accountId, id, deps.now()))) return { ok: false, reason: 'in-progress' };
  const learned = raw ? await learnDecision(deps, row.account_id, bufferSource(raw), 'spam') : undefined;
  return { ok: true, ...(learned ? { learned } : {}) };
}
