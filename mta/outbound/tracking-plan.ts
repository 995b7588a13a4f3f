// Owns what a send's tracking_settings and unsubscribe_settings mean: link hosts, the HTML rewrite, the stored record.
import type { AccountRow } from '../../storage/ports/accounts.js';
import { CUSTOM_CLICK_HOST, CUSTOM_OPEN_HOST, TRACK_CLICK, TRACK_LIST_UNSUBSCRIBE, TRACK_OPEN, trackingKey } from '../../storage/ports/tracking.js';
import type { TrackingDomainRow, TrackingDomainStore, TrackingScope } from '../../storage/ports/tracking-domains.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';
import type { ComposedMessage, ComposeOptions } from './compose.js';
import { rewriteHtml } from './html-links.js';
import type { SendRequest } from './send-request.js';
import { MAX_TRACKED_LINKS, signTrackingToken, tokenHost, type TrackKind } from './tracking-token.js';

/** Where the links of one kind point: a base URL (scheme, host, port) and the host name tokens are bound to. */
export interface LinkHost {
  base: string;
  host: string;
  /** A custom tracking domain (api.md §2.4), not http.public_url. */
  custom: boolean;
}

/** A send's tracking, resolved once per request. */
export interface TrackingPlan {
  click?: LinkHost;
  open?: LinkHost;
  /** Base URL of List-Unsubscribe links. */
  unsubscribe: string;
}

/** The base URL (http.public_url as configured, path included) and bound host of the control plane. */
export function publicLinkHost(publicUrl: string): LinkHost {
  return { base: publicUrl.replace(/\/+$/, ''), host: tokenHost(new URL(publicUrl).host) as string, custom: false };
}

/**
 * A custom domain's base URL: http.public_url with the custom host name in place of its host — same scheme, port
 * and path, since the custom name reaches the same listener (its CNAME points at the public host).
 */
function customLinkHost(publicUrl: string, hostname: string): LinkHost {
  const u = new URL(publicUrl);
  const path = u.pathname.replace(/\/+$/, '');
  return { base: `${u.protocol}//${hostname}${u.port ? `:${u.port}` : ''}${path}`, host: hostname, custom: true };
}

/**
 * Resolves the tracking fields of `body` for `account`. A `custom_domain_name` must name an active domain of that
 * scope registered by the account (or its parent, as a parent's DKIM keys sign for its sub-accounts); it needs
 * `enable: true` beside it, and `unsubscribe_settings` needs non-transactional mail (the only mail that gets
 * List-Unsubscribe): a field that would change nothing is refused, never ignored. Errors name the field.
 */
export async function planTracking(
  deps: { domains: Pick<TrackingDomainStore, 'findByName'>; publicUrl: string },
  account: AccountRow,
  body: SendRequest,
): Promise<{ ok: true; plan: TrackingPlan } | { ok: false; errors: string[] }> {
  const errors: string[] = [];
  const owners = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
  // Parsed only when a link needs it: a send without tracking reads http.public_url exactly as before.
  let fallbackHost: LinkHost | undefined;
  const fallback = () => (fallbackHost ??= publicLinkHost(deps.publicUrl));
  const lookup = async (field: string, name: string, scope: TrackingScope): Promise<LinkHost | undefined> => {
    let row: TrackingDomainRow | undefined;
    for (const id of owners) if ((row = await deps.domains.findByName(id, name))) break;
    if (!row) errors.push(`${field}: no custom tracking domain named "${name}"`);
    else if (row.scope !== scope) errors.push(`${field}: "${name}" is a tracking domain for ${row.scope}, not ${scope}`);
    else if (row.status !== 'active') errors.push(`${field}: custom tracking domain "${name}" is disabled`);
    else return customLinkHost(deps.publicUrl, row.hostname);
    return undefined;
  };
  const plan: TrackingPlan = { unsubscribe: deps.publicUrl };
  const ts = body.tracking_settings ?? {};
  for (const [key, kind] of [['click_tracking', 'click'], ['open_tracking', 'open']] as const) {
    const setting = ts[key];
    const field = `tracking_settings.${key}.custom_domain_name`;
    if (setting?.enable === true) {
      plan[kind] = setting.custom_domain_name !== undefined ? await lookup(field, setting.custom_domain_name, kind) : fallback();
    } else if (setting?.custom_domain_name !== undefined) {
      errors.push(`${field}: requires tracking_settings.${key}.enable: true`);
    }
  }
  const unsubscribeName = body.unsubscribe_settings?.custom_domain_name;
  if (unsubscribeName !== undefined) {
    if (body.transactional !== false) {
      errors.push('unsubscribe_settings.custom_domain_name: applies to non-transactional mail only ("transactional": false)');
    } else {
      const host = await lookup('unsubscribe_settings.custom_domain_name', unsubscribeName, 'unsubscribe');
      if (host) plan.unsubscribe = host.base;
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, plan };
}

/**
 * The compose hook that tracks one message's HTML part per `plan` (undefined when nothing is tracked): links to
 * `<base>/t/c/<token>`, the pixel `<base>/t/o/<token>`, tokens bound to the message (the UUID of its Message-ID),
 * its recipient (a message with several recipients has one body for all: 'all') and the link index. The message's
 * own unsubscribe URL is never click-tracked.
 */
export function htmlTracker(secret: Buffer, plan: TrackingPlan): ComposeOptions['trackHtml'] {
  const { click, open } = plan;
  if (!click && !open) return undefined;
  return (html, m) => {
    const messageKey = trackingKey(m.messageId);
    if (!messageKey) throw new Error('a tracked Message-ID must start with a UUID');
    const recipient = m.recipients.length === 1 ? 0 : 'all';
    const url = (kind: TrackKind, host: LinkHost, link: number) =>
      `${host.base}/t/${kind === 'click' ? 'c' : 'o'}/${signTrackingToken(secret, kind, host.host, { messageKey, recipient, link })}`;
    const out = rewriteHtml(html, {
      ...(click ? {
        click: {
          url: (i: number) => url('click', click, i),
          skip: (target: string) => m.unsubscribeUrl !== undefined && target === new URL(m.unsubscribeUrl).href,
          maxLinks: MAX_TRACKED_LINKS,
        },
      } : {}),
      ...(open ? { pixel: url('open', open, 0) } : {}),
    });
    return { html: out.html, open: out.pixel, links: out.links };
  };
}

/** The tracking record of a composed message for the queue's door: its bits and, when tracked, its tokens' data. */
export function trackingRecord(m: ComposedMessage, plan: TrackingPlan): AcceptedOutbound['engagement'] {
  const open = m.tracking?.open === true;
  const click = (m.tracking?.links.length ?? 0) > 0;
  const flags = (open ? TRACK_OPEN : 0) | (click ? TRACK_CLICK : 0) | (m.listUnsubscribe ? TRACK_LIST_UNSUBSCRIBE : 0);
  if (flags === 0) return undefined;
  const key = trackingKey(m.messageId);
  if (!(open || click) || !key) return { flags };
  return {
    flags,
    tokens: {
      key,
      links: click ? (m.tracking?.links ?? []) : null,
      clickHost: click && plan.click ? plan.click.host : null,
      openHost: open && plan.open ? plan.open.host : null,
      custom: (click && plan.click?.custom ? CUSTOM_CLICK_HOST : 0) | (open && plan.open?.custom ? CUSTOM_OPEN_HOST : 0),
    },
  };
}
