// Owns the inbound checks that decide at RCPT, in the order filtering decides: the recipient's lists, then the
// client's DNS list weight, then greylisting — each the earliest stage that knows, so refused mail is never taken in.
import type { Logger } from 'pino';
import { decideListVerdict, type ListVerdict } from '../../filters/inbound-lists.js';
import { decideDnsbl, type ListHit } from '../../filters/dnsbl.js';
import type { InboundDomainStore, ServedDomainRow } from '../../storage/ports/inbound-domains.js';
import type { InboundListStore } from '../../storage/ports/inbound-lists.js';
import type { InboundRecipientStore } from '../../storage/ports/inbound-recipients.js';
import { domainOf } from '../smtp/address.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';
import type { DnsListChecker } from './dnsbl.js';
import type { Greylister } from './greylist.js';
import { refusalAtRcpt } from './policy.js';

/** One RCPT as the MX has it: envelope sender ('' for <>), client address, the normalised recipient. */
export interface RcptQuery {
  mailFrom: string;
  clientIp: string;
  rcpt: string;
}

export interface RcptCheckDeps {
  domains: Pick<InboundDomainStore, 'findServedDomain'>;
  lists: Pick<InboundListStore, 'matchLists'>;
  /** Recipients created with filter off: neither the DNS lists nor greylisting hold their mail back. */
  recipients?: Pick<InboundRecipientStore, 'unfiltered'> | undefined;
  /** Present when `filters.dnsbl.sites` or `domain_sites` lists anything. */
  dnsLists?: DnsListChecker | undefined;
  /** `filters.dnsbl.threshold`. */
  dnsblThreshold: number;
  /** Present when greylisting is on for some domain (`inbound.greylist.*`). */
  greylist?: Greylister | undefined;
  /**
   * Whether the envelope sender's SPF passes for the client (RFC 7208), asked only for a sender safelisted by
   * address or domain of a greylisted domain. Absent: never passes.
   */
  spfPass?: ((q: RcptQuery) => Promise<boolean>) | undefined;
  logger: Logger;
}

export interface RcptChecks {
  /** The list verdict of one recipient of `served` (precedence and `abusePolicyOverride`: filters/inbound-lists.ts). */
  listVerdict(served: ServedDomainRow, q: RcptQuery): Promise<ListVerdict>;
  /** The client lists' hits for `ip` (cached by TTL), empty when no list is configured. */
  clientListing(ip: string): Promise<{ hits: ListHit[]; errors: string[] }>;
  /**
   * The reply refusing one recipient, or undefined to accept it: blocklisted by its lists → 550 5.7.1; safelisted →
   * no DNS list check, and greylisted only when safelisted by address or domain and SPF does not pass; the client's DNS list weight at or above the threshold → 554 5.7.1; a first
   * attempt under greylisting → 450 4.7.1; a recipient created with filter off → neither of the last two (its own
   * lists still hold). `served`: the recipient's served domain when the caller has just read it.
   */
  check(q: RcptQuery & { served?: ServedDomainRow }): Promise<SmtpReply | undefined>;
}

/** The RCPT-time checks over `deps`. */
export function createRcptChecks(deps: RcptCheckDeps): RcptChecks {
  const log = deps.logger.child({ component: 'inbound' });

  async function listVerdict(served: ServedDomainRow, q: RcptQuery): Promise<ListVerdict> {
    const local = q.rcpt.slice(0, q.rcpt.lastIndexOf('@'));
    const matches = await deps.lists.matchLists({
      accountId: served.account_id,
      domain: served.domain,
      // The address as recipient-level lists store it: lower case, on the provisioned domain even via an alias.
      recipient: `${local}@${served.domain}`.toLowerCase(),
      clientIp: q.clientIp,
      ...(q.mailFrom ? { senderAddress: q.mailFrom } : {}),
    });
    return decideListVerdict(matches, { abusePolicyOverride: served.abuse_policy_override === true });
  }

  const clientListing = async (ip: string) => (deps.dnsLists && deps.dnsLists.enabled ? deps.dnsLists.client(ip) : { hits: [], errors: [] });
  // Asked only when a DNS list or greylisting would hold the recipient back: accepted mail costs no look-up.
  const unfiltered = async (served: ServedDomainRow, rcpt: string) => {
    const address = `${rcpt.slice(0, rcpt.lastIndexOf('@'))}@${served.domain}`.toLowerCase();
    return !!deps.recipients && (await deps.recipients.unfiltered(served.account_id, [address])).length > 0;
  };

  return {
    listVerdict,
    clientListing,
    async check(q) {
      // The MX's relay decision has just read it (one look-up per RCPT, not two).
      const served = q.served ?? (await deps.domains.findServedDomain(domainOf(q.rcpt)));
      if (!served) return undefined;
      const lv = await listVerdict(served, q);
      const refused = refusalAtRcpt(lv);
      if (refused) return refused;
      if (lv.action === 'safelist') {
        // An envelope sender is easily forged: a safelisted address or domain skips greylisting only with SPF pass
        // (RFC 6647 §2.2 exempts known senders; a safelisted client IP is known by itself).
        if (!deps.greylist?.applies(served) || lv.itemType === 'ip_address' || (await deps.spfPass?.(q))) return undefined;
        return deps.greylist.check({ ...q, served, allowlisted: false });
      }
      const listing = await clientListing(q.clientIp);
      const dnsbl = decideDnsbl(listing.hits, [], deps.dnsblThreshold, listing.errors);
      if (dnsbl.verdict === 'listed') {
        if (await unfiltered(served, q.rcpt)) {
          log.info({ clientIp: q.clientIp, rcpt: q.rcpt, dnsbl }, 'rcpt accepted: client on DNS blocklists, recipient unfiltered');
          return undefined;
        }
        log.info({ clientIp: q.clientIp, rcpt: q.rcpt, dnsbl }, 'rcpt refused: client on DNS blocklists');
        return REPLY.dnsblListed(q.clientIp, dnsbl.hits.filter((h) => h.weight > 0).map((h) => h.zone));
      }
      if (!deps.greylist) return undefined;
      // DNSWL-listed clients (a negative weight) are known senders: not greylisted (RFC 6647 §2.2 exemptions).
      if (deps.greylist.applies(served) && (await unfiltered(served, q.rcpt))) return undefined;
      return deps.greylist.check({ ...q, served, allowlisted: dnsbl.score < 0 });
    },
  };
}
