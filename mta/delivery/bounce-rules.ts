// Owns classifying a remote reply, a connection failure or an undiallable route into delivered / deferred / bounced,
// with rules as data.
import type { RouteResult } from './resolve-route.js';

export type Outcome = 'delivered' | 'deferred' | 'bounced';

/** Why an outcome was chosen; logged and stored with the attempt. */
export type Category = 'accepted' | 'temporary' | 'permanent' | 'recipient' | 'reputation' | 'policy' | 'connection' | 'dns' | 'local';

export interface Classified {
  outcome: Outcome;
  category: Category;
  /** RFC 3463 enhanced status (from the reply, or derived from the basic code). */
  status: string;
  /** Add the recipient to the suppression list (source `hard_bounce`). */
  suppress: boolean;
}

/**
 * 5xx replies that are really about the sender's IP or reputation, not the recipient: retrying later (after a
 * delisting, or from a warmed-up IP) often succeeds, so they are deferred instead of bounced. Kept as data so the
 * operator-visible list is easy to extend; each rule names the receivers' usual wording.
 */
export const DEFER_RULES: readonly { name: string; category: Category; pattern: RegExp }[] = [
  { name: 'dnsbl-listed', category: 'reputation', pattern: /\b(block ?list(ed)?|black ?list(ed)?|listed (at|on|in)|dnsbl|rbl|spamhaus|spamcop|barracuda|sorbs|uceprotect)\b/i },
  { name: 'ip-reputation', category: 'reputation', pattern: /\b(poor|low|bad) reputation\b|\breputation of (the|your) (sending )?ip\b|\bip (address )?(has been )?(blocked|banned|rejected)\b/i },
  { name: 'rate-limited', category: 'policy', pattern: /\b(rate limit(ed)?|too many (messages|connections|recipients)|try (again )?later|throttl(ed|ing))\b/i },
  { name: 'greylisting', category: 'policy', pattern: /\bgreylist(ed|ing)?\b|\bgraylist(ed|ing)?\b/i },
];

const STATUS_RE = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;

/** The RFC 3463 enhanced status at the start of `text`, if any. */
export function enhancedStatus(text: string): string | undefined {
  return STATUS_RE.exec(text.trim())?.[0];
}

/** RFC 3463 §3.1/3.2: recipient-class failures (bad mailbox 5.1.x, mailbox disabled 5.2.1) are worth suppressing. */
export function recipientClass(status: string): boolean {
  return status.startsWith('5.1.') || status === '5.2.1';
}

/**
 * Classifies a reply `code` + `text` (text without the code). 2xx → delivered; 4xx → deferred; 5xx → bounced unless
 * a DEFER_RULES rule matches; anything else (1xx, 3xx where a final reply was due, garbage) → deferred, because an
 * unknown answer must never lose mail (ARCHITECTURE invariant 3).
 */
export function classifyReply(code: number | undefined, text: string): Classified {
  const given = enhancedStatus(text);
  if (code !== undefined && code >= 200 && code < 300) {
    return { outcome: 'delivered', category: 'accepted', status: given ?? '2.0.0', suppress: false };
  }
  if (code !== undefined && code >= 500 && code < 600) {
    const status = given && given.startsWith('5') ? given : '5.0.0';
    const rule = DEFER_RULES.find((r) => r.pattern.test(text));
    if (rule) return { outcome: 'deferred', category: rule.category, status: `4${status.slice(1)}`, suppress: false };
    const recipient = recipientClass(status);
    return { outcome: 'bounced', category: recipient ? 'recipient' : 'permanent', status, suppress: recipient };
  }
  const status = given && given.startsWith('4') ? given : '4.0.0';
  return { outcome: 'deferred', category: 'temporary', status, suppress: false };
}

/** A failure without a reply (refused, reset, timeout, TLS failure): always deferred (RFC 5321 §4.5.4.1). */
export function classifyError(err: { code?: string; originalCode?: string; message?: string }): Classified {
  // nodemailer wraps system errors (code ECONNECTION) and keeps the system code as originalCode.
  const code = err.originalCode ?? err.code ?? '';
  // RFC 3463: 4.4.1 no answer from host, 4.4.2 bad connection, 4.7.5 TLS failure (RFC 7372 for crypto failures).
  const status = code === 'ETIMEDOUT' || code === 'ECONNREFUSED' ? '4.4.1' : code === 'ETLS' ? '4.7.5' : '4.4.2';
  return { outcome: 'deferred', category: 'connection', status, suppress: false };
}

/** A route the worker cannot dial (resolve-route.ts, downstream-route.ts). */
export type RouteFailure = Exclude<RouteResult, { kind: 'hosts' }>;

/** How an attempt without a dialable route ends, for every recipient of the domain: no host answered, so no command. */
export interface RouteFailureOutcome {
  outcome: Exclude<Outcome, 'delivered'>;
  /** Our own reply code when the failure is permanent (it reads like a reply in the DSN), else null. */
  code: number | null;
  status: string;
  response: string;
}

/**
 * Classifies a route that cannot be dialled. The domain says it takes no mail → bounced: a null MX (RFC 7505 §3:
 * 556 5.1.10) or no such domain (NXDOMAIN: 550 5.1.2, RFC 3463 bad destination system address). Names without
 * addresses or a failed DNS look-up → deferred 4.4.3 (RFC 3463 directory server failure): a zone being fixed is
 * common, and unknown means temporary (ARCHITECTURE invariant 3). A route the outbound-connection policy refused:
 * back to ourselves → 554 5.4.6 (RFC 3463 routing loop detected; Postfix "loops back to myself"), to an internal
 * address → 550 5.4.4 (unable to route) for an MX, deferred 4.4.4 for a downstream. Never suppresses the recipient.
 */
export function classifyRouteFailure(route: RouteFailure): RouteFailureOutcome {
  switch (route.kind) {
    case 'null-mx':
      return { outcome: 'bounced', code: 556, status: '5.1.10', response: 'recipient domain publishes a null MX (RFC 7505)' };
    case 'no-domain':
      return { outcome: 'bounced', code: 550, status: '5.1.2', response: 'recipient domain does not exist (NXDOMAIN)' };
    case 'no-hosts':
      return { outcome: 'deferred', code: null, status: '4.4.3', response: 'no address for any MX host of the recipient domain' };
    case 'temp':
      return { outcome: 'deferred', code: null, status: '4.4.3', response: `DNS lookup failed: ${route.reason}` };
    case 'refused':
      if (!route.permanent) return { outcome: 'deferred', code: null, status: '4.4.4', response: route.reason };
      return route.loop
        ? { outcome: 'bounced', code: 554, status: '5.4.6', response: route.reason }
        : { outcome: 'bounced', code: 550, status: '5.4.4', response: route.reason };
  }
}
