// Owns the quarantine digest job (issue 37), run by the housekeeping leader: at each domain's interval, one digest
// per recipient with mail held since their last one (and the whole domain's to its admins, when chosen), queued as
// Sluice's own mail to the domain's downstream servers.
import crypto from 'node:crypto';
import { domainOf } from '../smtp/address.js';
import type { Logger } from 'pino';
import { bufferSource } from '../../storage/message-source.js';
import type { InboundDomainStore } from '../../storage/ports/inbound-domains.js';
import type { QuarantineRow, QuarantineStore } from '../../storage/ports/quarantine.js';
import { DIGEST_INTERVAL_MS, type DigestDomainRow, type QuarantineDigestStore } from '../../storage/ports/quarantine-digests.js';
import type { AcceptedRelay } from '../queue/accepted-message.js';
import { canonicalRecipient, isVirus } from '../inbound/digest-actions.js';
import { digestLinkUrl, digestViewUrl, mintDigestLink, mintDigestViewLink, type DigestAction } from '../inbound/digest-links.js';
import { digestEmail, type DigestItem } from './digest-email.js';

/** Messages one digest lists at most (the newest); the rest are counted. */
export const DIGEST_MAX_ITEMS = 100;
/** Held messages one round reads of a domain at most (a flood is summed up next round, from where it stopped). */
const ROUND_MAX_ROWS = 5_000;
/**
 * A round comes due this much before its interval is over: the job looks every 10 minutes, so a daily digest keeps
 * its hour instead of drifting by up to one look a day.
 */
const EARLY_MS = 5 * 60_000;

export interface QuarantineDigestDeps {
  digests: QuarantineDigestStore;
  quarantine: Pick<QuarantineStore, 'list'>;
  domains: Pick<InboundDomainStore, 'findDomainById' | 'details'>;
  queue: { accept(messages: AcceptedRelay[]): Promise<unknown> };
  /** `inbound.digest_from` (default quarantine@<smtp.hostname>). */
  from: () => string;
  /** DKIM-signs a digest From `domain`, or gives it back as it is when no key may sign for it. */
  sign?: (raw: Buffer, domain: string) => Promise<Buffer>;
  /** Signs the links (the `digest_link_secret` setting). */
  secret: Buffer;
  /** http.public_url: where the links point. */
  publicUrl: () => string;
  hostname: string;
  now: () => number;
  logger: Logger;
  intervalMs?: number;
}

/** One digest to send: its address, whether it is an admin's whole-domain one, and the held messages it lists. */
interface Target {
  admin: boolean;
  rows: QuarantineRow[];
}

export function createQuarantineDigests(deps: QuarantineDigestDeps) {
  const log = deps.logger.child({ component: 'quarantine-digest' });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  /** Held messages of the domain that came in [since, until), newest first, at most ROUND_MAX_ROWS. */
  async function heldSince(d: DigestDomainRow, since: number | null, until: number): Promise<QuarantineRow[]> {
    const rows: QuarantineRow[] = [];
    for (let offset = 0; rows.length < ROUND_MAX_ROWS; offset += 1000) {
      const page = await deps.quarantine.list(
        { accountId: d.account_id, domain: d.domain, status: 'held', since: since ?? undefined, until, limit: 1000, offset },
        until,
      );
      rows.push(...page.rows);
      if (page.rows.length < 1000) break;
    }
    return rows.slice(0, ROUND_MAX_ROWS);
  }

  /** Who gets a digest of these rows: each recipient its own; with `admins`, each admin on the domain the whole. */
  async function targetsOf(d: DigestDomainRow, rows: readonly QuarantineRow[]): Promise<Map<string, Target>> {
    const targets = new Map<string, Target>();
    for (const row of rows) {
      // Each recipient once per message, by its address on the protected domain (an alias's mail included): a
      // digest never goes to an address outside the domain.
      for (const address of new Set(row.rcpt_to.map((r) => canonicalRecipient(r, d.domain)))) {
        const t = targets.get(address) ?? { admin: false, rows: [] };
        t.rows.push(row);
        targets.set(address, t);
      }
    }
    if (!d.admins) return targets;
    const domain = await deps.domains.findDomainById(d.domain_id);
    if (!domain) return targets;
    const details = await deps.domains.details(domain);
    const ours = new Set([d.domain, ...details.aliases]);
    for (const admin of details.admins) {
      // An admin elsewhere (a customer's own mailbox at another provider) gets none: never outside the domain.
      if (!ours.has(admin.slice(admin.lastIndexOf('@') + 1))) continue;
      // The whole domain's digest replaces the admin's own (it lists those messages too).
      targets.set(admin, { admin: true, rows: [...rows] });
    }
    return targets;
  }

  function linksOf(row: QuarantineRow, address: string, admin: boolean): DigestItem['links'] {
    const url = (action: DigestAction) =>
      digestLinkUrl(deps.publicUrl(), mintDigestLink(deps.secret, { quarantineId: row.id, accountId: row.account_id, action, admin, address, expiresAt: row.expires_at }));
    const virus = isVirus(row);
    return {
      release: virus ? undefined : url('release'),
      // The null sender (a bounce) names nobody to safelist.
      safelist: virus || row.mail_from === '' ? undefined : url('safelist'),
      delete: url('delete'),
    };
  }

  async function send(d: DigestDomainRow, address: string, t: Target, now: number): Promise<void> {
    const from = deps.from();
    const items = t.rows.slice(0, DIGEST_MAX_ITEMS).map((row) => ({ row, links: linksOf(row, address, t.admin) }));
    // A recipient's digest links to their own view (signed for them); an admin manages the domain with login links.
    const viewLink = t.admin ? undefined : digestViewUrl(deps.publicUrl(), mintDigestViewLink(deps.secret, { accountId: d.account_id, address, now }));
    const mail = digestEmail({ to: address, from, domain: d.domain, admin: t.admin, items, more: t.rows.length - items.length, viewLink, hostname: deps.hostname, now });
    const raw = deps.sign ? await deps.sign(mail.raw, domainOf(from)) : mail.raw;
    // Queued as relayed mail: the worker takes it to the domain's downstream servers, where the recipient's mailbox
    // is; the domain's public MX is Sluice itself. The null reverse-path (RFC 5321 §4.5.5): a failure bounces to no one.
    await deps.queue.accept([
      {
        kind: 'relay',
        sendRequestId: crypto.randomBytes(6).toString('hex').toUpperCase(),
        messageId: mail.messageId,
        mailFrom: '',
        body: bufferSource(raw),
        recipients: [address],
        verdicts: [],
      },
    ]);
    log.info({ domain: d.domain, address, admin: t.admin, messages: t.rows.length }, 'quarantine digest queued');
  }

  /**
   * One round of a domain: its held mail since the last round; each address whose last digest is older than a
   * message gets one listing those; marked per address once queued, then the round. A crash midway sends the ones
   * already marked nothing twice.
   */
  async function round(d: DigestDomainRow, now: number): Promise<number> {
    const rows = await heldSince(d, d.round_at, now);
    const targets = await targetsOf(d, rows);
    const last = await deps.digests.sentTo(d.domain_id, [...targets.keys()]);
    let sent = 0;
    for (const [address, t] of targets) {
      const since = last.get(address);
      const fresh = since === undefined ? t.rows : t.rows.filter((r) => r.created_at >= since);
      if (fresh.length === 0) continue;
      await send(d, address, { ...t, rows: fresh }, now);
      await deps.digests.markSent(d.domain_id, address, now);
      sent++;
    }
    await deps.digests.markRound(d.domain_id, now);
    return sent;
  }

  return {
    /** Runs every round that is due; resolves with the digests queued. A domain that fails is logged and retried next time. */
    async runOnce(): Promise<number> {
      const now = deps.now();
      let sent = 0;
      for (let after = 0; ; ) {
        const page = await deps.digests.digestDomains(after, 500);
        for (const d of page) {
          if (d.round_at !== null && now - d.round_at < DIGEST_INTERVAL_MS[d.interval] - EARLY_MS) continue;
          try {
            sent += await round(d, now);
          } catch (err) {
            log.error({ err, domain: d.domain }, 'quarantine digests of a domain failed; tried again at the next look');
          }
        }
        if (page.length < 500) break;
        after = page.at(-1)!.domain_id;
      }
      return sent;
    },
    /** Looks every 10 minutes (the housekeeping leader). */
    start(): void {
      timer = setInterval(() => {
        running = this.runOnce().catch((err) => log.error({ err }, 'quarantine digests failed'));
      }, deps.intervalMs ?? 10 * 60_000);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}

export type QuarantineDigests = ReturnType<typeof createQuarantineDigests>;
