// Owns greylisting at RCPT for the domains that have it on (inbound.greylist.*): the triplet, the exemptions, the
// decision (filters/greylist.ts) and remembering it in the store every process shares.
import type { Logger } from 'pino';
import { clientNetwork, decideGreylist, type GreylistSettings } from '../../filters/greylist.js';
import type { GreylistStore, PruneCutoffs } from '../../storage/ports/greylist.js';
import type { ServedDomainRow } from '../../storage/ports/inbound-domains.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';

export interface Greylister {
  /** Whether recipients of `served` are greylisted at all (`inbound.greylist.domains`). */
  applies(served: ServedDomainRow): boolean;
  /**
   * Decides one RCPT of a served domain: undefined accepts it, a reply (450 4.7.1) defers it. Domains without
   * greylisting, allowlisted clients (DNSWL) and exempt client networks are accepted untouched.
   */
  check(q: { mailFrom: string; clientIp: string; rcpt: string; served: ServedDomainRow; allowlisted: boolean }): Promise<SmtpReply | undefined>;
  /**
   * rspamd answered `greylist` for a message: the same triplet memory decides for its recipients, whatever the
   * domain's own setting (rspamd asked for it). A reply when any triplet is deferred; undefined when all passed.
   */
  rspamdAsked(q: { mailFrom: string; clientIp: string; rcptTo: readonly string[] }): Promise<SmtpReply | undefined>;
}

/** Rows one greylist prune batch deletes, and batches per run (the retention job's defaults). */
const PRUNE_BATCH = 500;
const PRUNE_MAX_BATCHES = 200;
const HOUR = 3_600_000;
/**
 * A run that stopped at PRUNE_MAX_BATCHES with old rows left lets the next one start this soon instead of an hour
 * later: up to 100,000 rows a minute, so pruning keeps up with new_triplets_per_network_hour (1,000 an hour) filled
 * by thousands of networks at once, while each run stays bounded.
 */
const PRUNE_AGAIN_MS = 60_000;

/** `inbound.greylist.domains`: served domain names, or `*` for every one. */
export function greylistApplies(domains: readonly string[], served: ServedDomainRow): boolean {
  return domains.includes('*') || domains.includes(served.domain);
}

export function createGreylister(deps: {
  store: GreylistStore;
  domains: readonly string[];
  /** Client networks (CIDR) never greylisted, e.g. the domains' own mail servers sending back in. */
  exemptNetworks: (ip: string) => boolean;
  settings: GreylistSettings;
  now: () => number;
  logger: Logger;
}): Greylister {
  const log = deps.logger.child({ component: 'greylist' });
  // Forgetting what can no longer matter, from whichever process greylists: a triplet never retried once its retry
  // window is over (a later retry counts as a first attempt again anyway: decideGreylist), any triplet unseen for longer than
  // both the retry window and the pass time, a network whose last pass is older than the pass time. In batches of
  // PRUNE_BATCH rows (each its own short write), a turn of the event loop between two, at most PRUNE_MAX_BATCHES per
  // run: one run never holds the write lock long nor stalls the listener. Hourly, or PRUNE_AGAIN_MS after a run
  // that left old rows.
  let nextPruneAt = deps.now() + HOUR;
  let pruning = false;
  const pruneBatches = async (c: PruneCutoffs): Promise<boolean> => {
    for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
      if (batch > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      if ((await deps.store.prune(c, PRUNE_BATCH)) < PRUNE_BATCH) return true;
    }
    return false;
  };
  // Networks over the cap this hour, logged once each; forgotten when a prune starts (at most hourly), so the map
  // holds at most the networks capped in about two hours, each of which had to add the cap's triplets first.
  const capLogged = new Map<string, number>();
  const pruneNow = (now: number) => {
    if (pruning || now < nextPruneAt) return;
    pruning = true;
    nextPruneAt = now + HOUR;
    for (const [network, at] of capLogged) if (now - at >= HOUR) capLogged.delete(network);
    const s = deps.settings;
    const cutoffs = { unretriedBefore: now - s.retryWindowMs, seenBefore: now - Math.max(s.retryWindowMs, s.passMs), clientsBefore: now - s.passMs };
    pruneBatches(cutoffs)
      .then((done) => {
        if (!done) nextPruneAt = Math.min(nextPruneAt, deps.now() + PRUNE_AGAIN_MS);
      })
      .catch((err: unknown) => log.warn({ err }, 'greylist prune failed'))
      .finally(() => (pruning = false));
  };
  async function attempt(q: { mailFrom: string; clientIp: string; rcpt: string }): Promise<SmtpReply | undefined> {
    const triplet = { network: clientNetwork(q.clientIp), sender: q.mailFrom.toLowerCase(), recipient: q.rcpt.toLowerCase() };
    const now = deps.now();
    pruneNow(now);
    const [record, client] = await Promise.all([deps.store.find(triplet), deps.store.client(triplet.network)]);
    const d = decideGreylist(record, client, now, deps.settings);
    let capped = false;
    if (d.save && d.outcome.reason === 'greylist-first') {
      // Over the network's cap the answer is the same 450 4.7.1 (postgrey/Postfix policy servers do likewise): a
      // real MTA retries and gets through once the network's hour frees places; nothing is written for it.
      capped = !(await deps.store.saveFirst(triplet, d.save, { max: deps.settings.newPerNetworkHour, since: now - HOUR }));
      if (capped && !capLogged.has(triplet.network)) {
        capLogged.set(triplet.network, now);
        log.warn({ network: triplet.network, cap: deps.settings.newPerNetworkHour }, 'greylist: client network over its new-triplet cap; first attempts deferred unrecorded');
      }
    } else if (d.save) await deps.store.save(triplet, d.save);
    if (d.countPass) await deps.store.countPass(triplet.network, now);
    log.info({ ...triplet, clientIp: q.clientIp, outcome: d.outcome, ...(capped ? { capped } : {}) }, d.outcome.action === 'defer' ? 'greylisted' : 'greylisting passed');
    return d.outcome.action === 'defer' ? REPLY.greylisted(d.outcome.retryAfterS) : undefined;
  }
  return {
    applies: (served) => greylistApplies(deps.domains, served),
    async check(q) {
      if (!greylistApplies(deps.domains, q.served) || q.allowlisted || deps.exemptNetworks(q.clientIp)) return undefined;
      return attempt(q);
    },
    async rspamdAsked(q) {
      let deferred: SmtpReply | undefined;
      for (const rcpt of q.rcptTo) deferred = (await attempt({ ...q, rcpt })) ?? deferred;
      return deferred;
    },
  };
}
