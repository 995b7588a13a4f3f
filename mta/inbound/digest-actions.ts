// Owns what a quarantine digest's link does (issue 37): for its one address and message, release it, delete it, or
// release it and safelist its sender; never a virus out; each use logged. Also the words a digest and its pages
// use for why a message was held.
import type { Logger } from 'pino';
import { normaliseEmail } from '../../filters/inbound-names.js';
import type { InboundDomainStore } from '../../storage/ports/inbound-domains.js';
import type { InboundListStore, ListScope } from '../../storage/ports/inbound-lists.js';
import { QUARANTINE_LEASE_MS, quarantineStatus, type QuarantineRow } from '../../storage/ports/quarantine.js';
import type { DigestLinkClaim } from './digest-links.js';
import { deleteQuarantined, releaseQuarantined, type QuarantineActionDeps } from './quarantine-release.js';

export interface DigestActionDeps extends QuarantineActionDeps {
  lists: Pick<InboundListStore, 'addEntry'>;
  domains: Pick<InboundDomainStore, 'findDomainById' | 'details'>;
  /** `inbound.list_entries_per_account`: a safelist entry past it is not added (the release still happens). */
  maxListEntries: number;
  logger: Logger;
}

/**
 * What following a link came to. `done`: what it did (`safelisted` false when the sender could not be added: the
 * null sender, or the account's lists are full). Otherwise why nothing changed: `gone` (released, deleted or expired
 * already, for this address: a second click lands here), `virus` (never released by a link), `busy` (a release is
 * relaying it right now), `not-admin` (the address is no admin of the domain any more), `failed` (the relay did not
 * commit; try again).
 */
export type DigestOutcome =
  | { done: 'released' | 'deleted'; safelisted?: boolean }
  | { refused: 'gone' | 'virus' | 'busy' | 'not-admin' | 'failed' };

/** `rcpt` as recipient-level lists and digests name it: lower case, on the provisioned domain even via an alias. */
export const canonicalRecipient = (rcpt: string, domain: string) => `${rcpt.slice(0, rcpt.lastIndexOf('@'))}@${domain}`.toLowerCase();

/** True when a virus scan found one in the message: such a message is never released by a link. */
export function isVirus(row: Pick<QuarantineRow, 'reason' | 'verdicts'>): boolean {
  return row.reason === 'virus-quarantine' || row.verdicts.some((v) => (v as { step?: string; verdict?: string }).step === 'virus' && (v as { verdict?: string }).verdict === 'infected');
}

/**
 * Why a message was held, in words: the virus's name, or the spam score against the threshold with the rules that
 * made it (the highest first; DNS lists and the classifier count as rules), and the DNS lists the client was on.
 */
export function heldBecause(row: Pick<QuarantineRow, 'reason' | 'verdicts' | 'score'>): string {
  type V = { step?: string; verdict?: string; signature?: string; score?: number; threshold?: number; rules?: { name: string; score: number }[]; hits?: { zone?: string }[] };
  const steps = row.verdicts as V[];
  const virus = steps.find((v) => v.step === 'virus' && v.verdict === 'infected');
  if (virus || row.reason === 'virus-quarantine') return `virus: ${virus?.signature ?? 'found by the scanner'}`;
  const spam = steps.find((v) => v.step === 'spam');
  const rules = [...(spam?.rules ?? [])].filter((r) => r.score !== 0).sort((a, b) => b.score - a.score).slice(0, 5);
  const lists = steps.find((v) => v.step === 'dnsbl')?.hits?.map((h) => h.zone).filter(Boolean) ?? [];
  return [
    `spam score ${row.score}${spam?.threshold !== undefined ? ` (threshold ${spam.threshold})` : ''}`,
    ...(rules.length > 0 ? [`rules: ${rules.map((r) => `${r.name} ${r.score}`).join(', ')}`] : []),
    ...(lists.length > 0 ? [`DNS lists: ${lists.join(', ')}`] : []),
  ].join('; ');
}

/**
 * The message a link names as that link's holder may see it: undefined when it is gone for them (deleted, released,
 * expired, no longer addressed to them, or the link's admin is no admin of its domain any more).
 */
export async function digestMessage(deps: Pick<DigestActionDeps, 'store' | 'domains' | 'now'>, claim: DigestLinkClaim): Promise<QuarantineRow | undefined> {
  const row = await deps.store.find(claim.accountId, claim.quarantineId);
  if (!row || row.domain_id === null || quarantineStatus(row, deps.now(), QUARANTINE_LEASE_MS) === 'released') return undefined;
  if (claim.admin) {
    const domain = await deps.domains.findDomainById(row.domain_id);
    const admins = domain ? (await deps.domains.details(domain)).admins : [];
    return admins.includes(claim.address) ? row : undefined;
  }
  return row.rcpt_to.some((r) => canonicalRecipient(r, row.domain) === claim.address) ? row : undefined;
}

/**
 * Does what the link says, once: a second use finds the message gone for its address and changes nothing. A
 * recipient's link acts on that recipient's part of the message only (the others' stays held); an admin's on the
 * whole message. Release and release-and-safelist refuse a virus whatever the link says. Every use is logged.
 */
export async function runDigestAction(deps: DigestActionDeps, claim: DigestLinkClaim): Promise<DigestOutcome> {
  const outcome = await act(deps, claim);
  deps.logger.info(
    {
      component: 'quarantine-digest', quarantineId: claim.quarantineId, accountId: claim.accountId, address: claim.address,
      admin: claim.admin, action: claim.action, outcome: 'done' in outcome ? outcome.done : outcome.refused,
      ...('done' in outcome && outcome.safelisted !== undefined ? { safelisted: outcome.safelisted } : {}),
    },
    'digest link used',
  );
  return outcome;
}

async function act(deps: DigestActionDeps, claim: DigestLinkClaim): Promise<DigestOutcome> {
  const row = await digestMessage(deps, claim);
  if (!row) return { refused: claim.admin && (await deps.store.find(claim.accountId, claim.quarantineId)) ? 'not-admin' : 'gone' };
  const only = claim.admin ? undefined : (r: string) => canonicalRecipient(r, row.domain) === claim.address;
  if (claim.action === 'delete') {
    const res = await deleteQuarantined(deps, claim.accountId, row.id, { asSpam: false, ...(only ? { only } : {}) });
    return res.ok ? { done: 'deleted' } : { refused: res.reason === 'in-progress' ? 'busy' : 'gone' };
  }
  if (isVirus(row)) return { refused: 'virus' };
  const res = await releaseQuarantined(deps, claim.accountId, row.id, only);
  if (!res.ok) return { refused: res.reason === 'in-progress' ? 'busy' : res.reason === 'relay-failed' ? 'failed' : 'gone' };
  if (res.learned === 'failed') deps.logger.warn({ quarantineId: row.id }, 'classifier could not learn a released message as ham');
  if (claim.action !== 'safelist') return { done: 'released' };
  // The envelope sender, as the lists match it (rcpt-checks.ts): the recipient's own safelist, or the domain's for
  // its admin. The null sender <> (bounces) names nobody to safelist.
  const sender = row.mail_from === '' ? undefined : normaliseEmail(row.mail_from);
  if (!sender || row.domain_id === null) return { done: 'released', safelisted: false };
  const scope: ListScope = claim.admin
    ? { level: 'domain', accountId: row.account_id, domainId: row.domain_id, domain: row.domain }
    : { level: 'recipient', accountId: row.account_id, domainId: row.domain_id, recipient: claim.address };
  const added = await deps.lists.addEntry(scope, { item: sender, itemType: 'email_address', action: 'safelist' }, deps.now(), deps.maxListEntries);
  return { done: 'released', safelisted: added !== 'full' };
}
