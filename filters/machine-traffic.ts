// Owns telling machine traffic from people on tracking URLs: link scanners and image proxies, as a verdict record.

/** What is known of one hit on a tracking URL. */
export interface TrackingHit {
  kind: 'open' | 'click';
  userAgent: string;
  /** When the hit came (ms). */
  at: number;
  /** First delivery of the message (ms), or null when no delivery is recorded yet. */
  deliveredAt: number | null;
  /** Link index of this click (clicks only). */
  link?: number;
  /** The message's previous click, if any: when and on which link. */
  lastClick?: { at: number; link: number } | null;
}

export type MachineReason = 'no-user-agent' | 'image-proxy' | 'link-scanner' | 'before-delivery' | 'at-delivery' | 'click-burst';

export type TrafficVerdict = { machine: false } | { machine: true; reason: MachineReason };

/**
 * Hits this soon after the message was delivered are the receiving side's machines: security gateways fetch every
 * link as the message arrives (resend-node#901, kannon#412), Apple Mail Privacy Protection loads images ahead.
 */
export const DELIVERY_WINDOW_MS = 20_000;

/** Two clicks on different links of one message this close together are a scanner walking the links. */
export const CLICK_BURST_MS = 2_000;

// Mail providers' image proxies fetch the pixel when the message is opened or on arrival (Gmail, Yahoo), or for
// privacy ahead of any reading (Apple Mail Privacy Protection sends a bare "Mozilla/5.0").
const IMAGE_PROXIES: readonly RegExp[] = [/GoogleImageProxy/i, /ggpht\.com/i, /YahooMailProxy/i, /^Mozilla\/5\.0$/];

// Link scanners and previewers: security gateways, chat unfurlers, HTTP libraries and headless browsers.
const LINK_SCANNERS: readonly RegExp[] = [
  /\b(?:bot|crawler|spider|scanner|preview)\b/i,
  /bot\//i,
  /HeadlessChrome|PhantomJS|Puppeteer|Playwright/i,
  /^(?:curl|Wget|python-requests|python-urllib|Go-http-client|okhttp|Java|libwww-perl|Apache-HttpClient|axios)\//i,
  /Barracuda|Mimecast|Proofpoint|Symantec|Forcepoint|TrendMicro|Sophos|Fortinet|IronPort|SafeLinks|Microsoft Office|ms-office/i,
  /Slackbot|SkypeUriPreview|Discordbot|WhatsApp|facebookexternalhit|LinkedInBot|Twitterbot|TelegramBot/i,
];

/**
 * Whether a hit looks like machine traffic, and why. Rules, first match wins: no User-Agent; a known image proxy
 * (opens) or link scanner (either kind) by User-Agent; a hit before the message's first delivery is recorded
 * (a gateway fetching while the message is still being accepted) or within DELIVERY_WINDOW_MS after it; a click
 * on another link of the same message within CLICK_BURST_MS of the previous click. Detection only: the caller
 * decides what counts (the tracker still records the event, flagged).
 */
export function classifyTrackingHit(h: TrackingHit): TrafficVerdict {
  const ua = h.userAgent.trim();
  if (ua === '') return { machine: true, reason: 'no-user-agent' };
  if (h.kind === 'open' && IMAGE_PROXIES.some((re) => re.test(ua))) return { machine: true, reason: 'image-proxy' };
  if (LINK_SCANNERS.some((re) => re.test(ua))) return { machine: true, reason: 'link-scanner' };
  if (h.deliveredAt === null) return { machine: true, reason: 'before-delivery' };
  if (h.at - h.deliveredAt < DELIVERY_WINDOW_MS) return { machine: true, reason: 'at-delivery' };
  if (h.kind === 'click' && h.lastClick && h.lastClick.link !== h.link && h.at - h.lastClick.at < CLICK_BURST_MS) {
    return { machine: true, reason: 'click-burst' };
  }
  return { machine: false };
}
