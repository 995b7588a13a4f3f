// Owns the tracker: a hit on an open or click URL → verified token → `open` / `click` event → pixel or redirect.
import { classifyTrackingHit } from '../../filters/machine-traffic.js';
import type { AccountStore } from '../../storage/ports/accounts.js';
import { CUSTOM_CLICK_HOST, CUSTOM_OPEN_HOST, type TrackingStore } from '../../storage/ports/tracking.js';
import type { TrackingDomainStore } from '../../storage/ports/tracking-domains.js';
import { verifyTrackingToken, tokenHost, type TrackKind } from './tracking-token.js';

/** The 43-byte transparent 1×1 GIF89a every open answers with. */
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

/** Longest User-Agent kept in an event; longer ones are cut. */
const MAX_USER_AGENT = 512;

export interface TrackerDeps {
  secret: Buffer;
  tracking: Pick<TrackingStore, 'find' | 'hit'>;
  domains: Pick<TrackingDomainStore, 'findByHost'>;
  accounts: Pick<AccountStore, 'findById'>;
  now: () => number;
}

/** One request to a tracking URL. */
export interface TrackerRequest {
  kind: TrackKind;
  token: string;
  /** The Host header. */
  host: string | undefined;
  userAgent: string | undefined;
  ip: string;
  /** HEAD answers like GET but records nothing (no person ever sends one). */
  method: string;
  /** The query string: tracking URLs have none, so any is a crafted URL. */
  query: string;
}

export type TrackerAnswer = { kind: 'redirect'; url: string } | { kind: 'pixel' } | { kind: 'not-found' };

const notFound: TrackerAnswer = { kind: 'not-found' };

/**
 * Creates the tracker. `hit` answers not-found — and records nothing — for a token that does not verify (altered,
 * of the other kind, or issued for another host than the request's Host), a message no longer stored (past
 * retention.tracking_days), a custom domain that was deleted or passed to another account, an unknown link index,
 * or any query string. The redirect target is only ever the URL stored at send time under the token's link index:
 * no request can name where it goes (no open redirect). Otherwise it records one event in a group commit (the
 * tracking row's first open or click and the event with its roll-up, atomically), flagged when
 * filters/machine-traffic.ts says a machine made the hit, and answers once that is durable.
 */
export function createTracker(deps: TrackerDeps) {
  return {
    async hit(r: TrackerRequest): Promise<TrackerAnswer> {
      const host = tokenHost(r.host);
      if (!host || r.query !== '') return notFound;
      const data = verifyTrackingToken(deps.secret, r.kind, host, r.token);
      if (!data) return notFound;
      const row = await deps.tracking.find(data.messageKey);
      if (!row) return notFound;
      if ((r.kind === 'click' ? row.click_host : row.open_host) !== host) return notFound;
      if (row.custom & (r.kind === 'click' ? CUSTOM_CLICK_HOST : CUSTOM_OPEN_HOST)) {
        // Deleting a custom domain breaks its links (api.md §2.4); a disabled one keeps serving mail already sent.
        const domain = await deps.domains.findByHost(host, r.kind);
        const owner = domain ? await deps.accounts.findById(domain.account_id) : undefined;
        const account = await deps.accounts.findById(row.account_id);
        if (!domain || !owner || !account || (owner.id !== account.id && owner.id !== account.parent_id)) return notFound;
      }
      const named = data.recipient === 'all' ? row.recipients : row.recipients[data.recipient];
      if (named === undefined) return notFound;
      let url: string | undefined;
      if (r.kind === 'click') {
        url = row.links?.[data.link];
        if (url === undefined) return notFound;
      }
      const answer: TrackerAnswer = url !== undefined ? { kind: 'redirect', url } : { kind: 'pixel' };
      if (r.method === 'HEAD') return answer;

      const now = deps.now();
      const userAgent = (r.userAgent ?? '').slice(0, MAX_USER_AGENT);
      const verdict = classifyTrackingHit({
        kind: r.kind,
        userAgent,
        at: now,
        deliveredAt: row.delivered_at,
        link: data.link,
        lastClick: row.last_click_at === null ? null : { at: row.last_click_at, link: row.last_click_link ?? -1 },
      });
      const machine = verdict.machine;
      const handle = (await deps.accounts.findById(row.account_id))?.handle ?? '';
      const payload = {
        ...(row.from_email ? { email: row.from_email } : {}),
        customer_handle: handle,
        timestamp: Math.floor(now / 1000),
        event: r.kind,
        request_id: row.request_id,
        smtp_id: `<${row.message_id}>`,
        ...(row.campaign_id ? { campaign_id: row.campaign_id } : {}),
        recipients: Array.isArray(named) ? named : [named],
        ...(url !== undefined ? { url } : {}),
        user_agent: userAgent,
        ip: r.ip,
        ...(verdict.machine ? { machine: true, machine_reason: verdict.reason } : {}),
      };
      // One unit: the first open or click (and the first human one), the last click, the event and its counters.
      await deps.tracking.hit({ id: row.id, kind: r.kind, link: data.link, at: now, machine, event: { accountId: row.account_id, kind: r.kind, payload, at: now } });
      return answer;
    },
  };
}

export type Tracker = ReturnType<typeof createTracker>;
