// Owns the safelist/blocklist decision for one inbound message: which matching entry wins, as a verdict record.
import type { AbusePolicy } from '../storage/ports/inbound-domains.js';
import type { ListEntryRow, ListItemType, ListLevel, ListMatches } from '../storage/ports/inbound-lists.js';

export type ListReason =
  | 'blocklist-sender'
  | 'blocklist-domain'
  | 'blocklist-ip'
  | 'safelist-sender'
  | 'safelist-domain'
  | 'safelist-ip';

/**
 * The lists' word on a message. `block`: refuse (550 5.7.1 at the earliest stage that knows). `safelist`: skip the
 * spam policy (authentication results are still recorded). `none`: no entry matched; the other filters decide.
 */
export type ListVerdict =
  | { action: 'none'; reason: 'no-list-match' }
  | { action: 'block' | 'safelist'; level: ListLevel; item: string; itemType: ListItemType; reason: ListReason };

const REASON_SUFFIX: Record<ListItemType, 'sender' | 'domain' | 'ip'> = {
  email_address: 'sender',
  domain: 'domain',
  ip_address: 'ip',
};

// Which entry a verdict names when several of one list match at one level: the most specific kind of item.
const SPECIFICITY: Record<ListItemType, number> = { email_address: 0, domain: 1, ip_address: 2 };

function pick(entries: ListEntryRow[]): ListEntryRow | undefined {
  return [...entries].sort((a, b) => SPECIFICITY[a.item_type] - SPECIFICITY[b.item_type] || a.id - b.id)[0];
}

/**
 * Decides the list verdict from the entries that matched (storage `matchLists`). Rules:
 * 1. The most specific level with any match decides alone: recipient > domain > account — a recipient may safelist
 *    a sender its domain blocks, a domain may safelist what its account blocks.
 * 2. `abusePolicyOverride` (the domain setting) puts the domain level above the recipient level: the domain's
 *    administrator has the last word over both the abuse policy (see `effectiveAbusePolicy`) and the lists, so a
 *    recipient cannot safelist what the domain blocks. The account level stays last.
 * 3. Within the deciding level a blocklist match beats a safelist match (fail closed; an exception belongs at a more
 *    specific level). The verdict names the most specific matching item: sender address, then domain, then IP.
 */
export function decideListVerdict(matches: ListMatches, opts: { abusePolicyOverride?: boolean } = {}): ListVerdict {
  const order: ListLevel[] = opts.abusePolicyOverride
    ? ['domain', 'recipient', 'account']
    : ['recipient', 'domain', 'account'];
  for (const level of order) {
    const entries = matches[level];
    if (entries.length === 0) continue;
    const blocked = pick(entries.filter((e) => e.action === 'blocklist'));
    const chosen = blocked ?? pick(entries.filter((e) => e.action === 'safelist'));
    if (!chosen) continue;
    const action = blocked ? 'block' : 'safelist';
    return {
      action,
      level,
      item: chosen.item,
      itemType: chosen.item_type,
      reason: `${blocked ? 'blocklist' : 'safelist'}-${REASON_SUFFIX[chosen.item_type]}`,
    };
  }
  return { action: 'none', reason: 'no-list-match' };
}

/**
 * The abuse policy that applies to one recipient. With `abusePolicyOverride` true the domain's policy applies even
 * when the recipient has one of its own; otherwise the recipient's policy wins when set, then the domain's, then
 * `fallback`. (OAS-I DomainSettings: "If true, this abuse policy overrides the recipient abuse policy.")
 */
export function effectiveAbusePolicy(input: {
  domain: { abusePolicy: AbusePolicy | null; abusePolicyOverride: boolean | null };
  recipient?: { abusePolicy: AbusePolicy | null } | undefined;
  fallback: AbusePolicy;
}): AbusePolicy {
  const domainPolicy = input.domain.abusePolicy ?? input.fallback;
  if (input.domain.abusePolicyOverride) return domainPolicy;
  return input.recipient?.abusePolicy ?? domainPolicy;
}
