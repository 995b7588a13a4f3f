// Owns the inbound policy step: what the verdicts do to a message, per recipient domain (relay, flag, quarantine,
// block), and the one reply to DATA. It decides only; the pipeline commits (maddy keeps checks apart the same way).
import { effectiveAbusePolicy, type ListVerdict } from '../../filters/inbound-lists.js';
import {
  SCANNER_FAILED, spamUndecided, type PolicyStepVerdict, type SpamStepVerdict, type StepVerdict, type VirusStepVerdict,
} from '../../filters/inbound-verdicts.js';
import { DEFAULT_DOMAIN_SETTINGS, type ServedDomainRow } from '../../storage/ports/inbound-domains.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';

/**
 * The accepted recipients of one provisioned domain (an alias counts as its domain); `safe` safelisted the sender;
 * `unfiltered`: recipients created with filter off (PUT /inbound/v1/users), whose mail the spam policy skips.
 */
export interface DomainRecipients {
  served: ServedDomainRow;
  rcpt: string[];
  safe: string[];
  unfiltered?: string[];
}

/** Recipients that get one and the same copy of the message. */
export interface RelayPlan {
  rcpt: string[];
  /** Their provisioned domains (inbound_domains.id). */
  domainIds: number[];
  /** The domain's spam header name, lower case: removed from the incoming message (nobody pre-flags or pre-clears). */
  strip: string;
  /** `Name: value`, the domain's spam header, when its policy flags the message. */
  flag?: string;
}

/** Recipients of one domain whose copy is quarantined (stored, not relayed). */
export interface QuarantinePlan {
  served: ServedDomainRow;
  rcpt: string[];
  strip: string;
}

export interface PolicyDecision {
  /** The policy verdict records, in order (each domain's safelisted recipients, then the others). */
  verdicts: PolicyStepVerdict[];
  relays: RelayPlan[];
  quarantines: QuarantinePlan[];
  /** The reply to DATA when nothing is to be committed; otherwise 250 once every plan is committed. */
  refusal?: SmtpReply;
}

/** At RCPT (the earliest stage that knows): a recipient whose lists block the client or sender is refused. */
export function refusalAtRcpt(lv: ListVerdict): SmtpReply | undefined {
  return lv.action === 'block' ? REPLY.senderBlocklisted : undefined;
}

/** At DATA when no recipient is left after the lists: blocklisted by every one, or no domain served any more. */
export function refusalWithoutRecipients(verdicts: readonly StepVerdict[]): SmtpReply {
  return verdicts.some((v) => v.step === 'lists' && v.verdict === 'block') ? REPLY.senderBlocklisted : REPLY.noRecipientServed;
}

/** A virus: quarantined where the domain quarantines, refused everywhere else (never relayed). */
function virusPolicy(groups: readonly DomainRecipients[], virus: VirusStepVerdict): PolicyDecision {
  const verdicts: PolicyStepVerdict[] = [];
  const quarantines: QuarantinePlan[] = [];
  for (const { served, rcpt } of groups) {
    const policy = effectiveAbusePolicy({
      domain: { abusePolicy: served.abuse_policy, abusePolicyOverride: served.abuse_policy_override === true },
      fallback: DEFAULT_DOMAIN_SETTINGS.abusePolicy,
    });
    const strip = (served.spam_header_name ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName).toLowerCase();
    if (policy === 'quarantine') {
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: [...rcpt], verdict: 'quarantine', reason: 'virus-quarantine' });
      quarantines.push({ served, rcpt: [...rcpt], strip });
    } else {
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: [...rcpt], verdict: 'block', reason: 'virus-refused' });
    }
  }
  return { verdicts, relays: [], quarantines, ...(quarantines.length === 0 ? { refusal: REPLY.virus(virus.signature ?? 'unknown') } : {}) };
}

/**
 * The policy for the accepted recipients of a scanned message:
 * - no spam decision (rspamd down, `filters.rspamd.failure = tempfail`; rspamd's `soft reject`) → 451 4.7.1,
 *   nothing kept;
 * - a virus (clamd) → each domain's recipients, safelisted or not: quarantined under `quarantine`, else refused —
 *   a virus is never relayed, flagged or not; when nobody keeps it, 554 5.7.1 naming the signature;
 * - safelisted recipients, unfiltered ones (filter=false: the policy is not applied to their mail, OAS-I PUT /users)
 *   and, when the message is not spam, all others → relayed as they are;
 * - spam → each domain's abuse policy for its non-safelisted recipients: block → nothing kept; flag → relayed with
 *   the domain's `spamHeaderName: spamHeaderValue`; quarantine → stored, not relayed.
 * Recipients whose copies are the same (same header to strip, same flag) share one relay. DATA has one reply: when
 * no recipient keeps the message, 550 5.7.1 (as spam when a policy blocked it, else blocklisted); otherwise the
 * refused recipients simply get nothing (recorded in the verdicts; no bounce, so no backscatter).
 */
export function decidePolicy(groups: readonly DomainRecipients[], spam: SpamStepVerdict, virus?: VirusStepVerdict): PolicyDecision {
  if (virus?.verdict === 'infected') return virusPolicy(groups, virus);
  if (spamUndecided(spam)) return { verdicts: [], relays: [], quarantines: [], refusal: spam.reason === SCANNER_FAILED ? REPLY.scannerDown : REPLY.softReject };
  const verdicts: PolicyStepVerdict[] = [];
  const relays = new Map<string, RelayPlan>();
  const quarantines: QuarantinePlan[] = [];
  let blockedByPolicy = 0;
  for (const g of groups) {
    const { served, rcpt, safe } = g;
    const headerName = served.spam_header_name ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName;
    const headerValue = served.spam_header_value ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderValue;
    const strip = headerName.toLowerCase();
    const policy = effectiveAbusePolicy({
      domain: { abusePolicy: served.abuse_policy, abusePolicyOverride: served.abuse_policy_override === true },
      fallback: DEFAULT_DOMAIN_SETTINGS.abusePolicy,
    });
    const addRelay = (to: string[], flagged: boolean) => {
      if (to.length === 0) return;
      const key = `${strip}\n${flagged ? headerValue : ''}`;
      let r = relays.get(key);
      if (!r) {
        r = { rcpt: [], domainIds: [], strip, ...(flagged ? { flag: `${headerName}: ${headerValue}` } : {}) };
        relays.set(key, r);
      }
      r.rcpt.push(...to);
      if (!r.domainIds.includes(served.id)) r.domainIds.push(served.id);
    };
    if (safe.length > 0) {
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: safe, verdict: 'relay', reason: 'safelisted' });
      addRelay(safe, false);
    }
    // Said only of spam, where it changes what happens: otherwise `not-spam` is the reason they are relayed.
    const unfiltered = spam.verdict === 'spam' ? (g.unfiltered ?? []).filter((r) => rcpt.includes(r) && !safe.includes(r)) : [];
    if (unfiltered.length > 0) {
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: unfiltered, verdict: 'relay', reason: 'recipient-unfiltered' });
      addRelay(unfiltered, false);
    }
    const others = rcpt.filter((r) => !safe.includes(r) && !unfiltered.includes(r));
    if (others.length === 0) continue;
    if (spam.verdict !== 'spam') {
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: others, verdict: 'relay', reason: 'not-spam' });
      addRelay(others, false);
      continue;
    }
    verdicts.push({ step: 'policy', domain: served.domain, rcpt: others, verdict: policy, reason: `abuse-policy-${policy}` });
    if (policy === 'block') blockedByPolicy += others.length;
    else if (policy === 'flag') addRelay(others, true);
    else quarantines.push({ served, rcpt: others, strip });
  }
  const decision: PolicyDecision = { verdicts, relays: [...relays.values()], quarantines };
  if (relays.size === 0 && quarantines.length === 0) decision.refusal = blockedByPolicy > 0 ? REPLY.spam : REPLY.senderBlocklisted;
  return decision;
}

/** The accepted recipients of one account and the spam verdict judged for it (its own classifier model). */
export interface AccountRecipients {
  accountId: number;
  groups: DomainRecipients[];
  spam: SpamStepVerdict;
}

/** One account's policy decision (its copy: own verdicts, own headers, own quarantine rows). */
export interface AccountDecision extends PolicyDecision {
  accountId: number;
}

/**
 * The policy of a message whose recipients may span accounts: `decidePolicy` per account, with that account's spam
 * verdict, and the one reply to DATA. SMTP answers DATA once for the whole transaction (RFC 5321 §4.1.1.4; per
 * recipient replies after DATA exist only in LMTP, RFC 2033 §4.2), so:
 * - one account: its decision as it is (the reply is what it always was);
 * - any account's refusal is temporary (4xx: no spam decision, rspamd soft reject): that reply for all, nothing is
 *   committed, and the sender's retry is judged again for everybody — accepting the others would lose nothing but
 *   the deferred account's mail could then only be bounced or dropped;
 * - some account keeps the message (relay, flag or quarantine): 250; an account whose policy refused it gets
 *   nothing — silently dropped, recorded in its policy verdict and logged, no bounce (no backscatter to a forged
 *   sender), as Postfix with amavis does for a per-recipient outcome that cannot be said after DATA. A drop, not a
 *   quarantine: `block` means "do not take it", and keeping it would hold mail the tenant asked to refuse;
 * - every account refused: 550 5.7.1 as spam when any policy blocked it as spam, else the first refusal (a virus,
 *   a blocklist).
 */
export function decideAccountPolicies(
  accounts: readonly AccountRecipients[],
  virus?: VirusStepVerdict,
): { decisions: AccountDecision[]; refusal?: SmtpReply } {
  const decisions = accounts.map((a) => ({ accountId: a.accountId, ...decidePolicy(a.groups, a.spam, virus) }));
  if (decisions.length === 1) return { decisions, ...(decisions[0]!.refusal ? { refusal: decisions[0]!.refusal } : {}) };
  const refusals = decisions.flatMap((d) => (d.refusal ? [d.refusal] : []));
  const temporary = refusals.find((r) => r.code < 500);
  if (temporary) return { decisions, refusal: temporary };
  if (refusals.length < decisions.length) return { decisions };
  return { decisions, refusal: refusals.find((r) => r === REPLY.spam) ?? refusals[0]! };
}
