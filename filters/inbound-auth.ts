// Owns the authentication step of inbound mail: SPF, DKIM, DMARC and ARC through mailauth, as one verdict record and
// one Authentication-Results header field (RFC 8601) carrying our authserv-id.
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { domainToASCII } from 'node:url';
import { authenticate } from './mailauth-entry.js';
import type { HeaderField } from './message-headers.js';

/**
 * A DNS look-up in `dns.promises.resolve` style: records, or a thrown error whose `code` is ENOTFOUND / ENODATA
 * (no such name / no such records) or anything else (temporary). Injected so that this module opens no socket.
 */
export type AuthResolver = (name: string, rrtype: string) => Promise<unknown>;

/** What the checks found, in RFC 8601 result words (`pass`, `fail`, `softfail`, `none`, `temperror`, …). */
export interface AuthResults {
  spf: { result: string; domain: string | null };
  /** One entry per DKIM-Signature (a single `none` entry when the message is unsigned). */
  dkim: { result: string; domain: string | null; selector: string | null; aligned: boolean }[];
  /** `policy` is the policy that applies to the From domain (`sp` for subdomains), null without a record. */
  dmarc: { result: string; domain: string | null; policy: 'none' | 'quarantine' | 'reject' | null };
  arc: { result: string };
}

export type AuthReason =
  | 'dmarc-fail-reject'
  | 'dmarc-fail-quarantine'
  | 'dmarc-fail'
  | 'spf-fail'
  | 'dkim-fail'
  | 'spf-temperror'
  | 'dmarc-temperror'
  | 'dmarc-pass'
  | 'dkim-pass'
  | 'spf-pass'
  | 'auth-none'
  | 'filter-error:mailauth';

/**
 * The authentication step's record. `verdict` summarises (`fail`: a check positively failed; `temperror`: DNS
 * trouble, the message is accepted and tagged by its Authentication-Results, RFC 7208 §2.6.6; `pass`: DMARC, or
 * failing a DMARC record at least one of SPF/DKIM, passed). Detection only: the spam step and the domain policy
 * decide what happens (a check reports, config decides).
 */
export interface AuthVerdict {
  step: 'auth';
  verdict: 'pass' | 'fail' | 'none' | 'temperror';
  reason: AuthReason;
  results: AuthResults;
  /** The complete `Authentication-Results: …` field (folded with CRLF + space, no final line break). */
  header: string;
}

export interface AuthInput {
  /** The message; a stream is hashed as it is read (DKIM body hashes, ARC), never assembled in memory. */
  raw: Buffer | Readable;
  clientIp: string;
  helo: string;
  /** Envelope sender; '' for the null sender <>. */
  mailFrom: string;
}

function dmarcPolicy(p: string | undefined): 'none' | 'quarantine' | 'reject' | null {
  return p === 'none' || p === 'quarantine' || p === 'reject' ? p : null;
}

/** The reason that best explains the results: failures first (DMARC, then SPF, then DKIM), then DNS trouble, then passes. */
export function authReason(r: AuthResults): { verdict: AuthVerdict['verdict']; reason: AuthReason } {
  if (r.dmarc.result === 'fail') {
    if (r.dmarc.policy === 'reject') return { verdict: 'fail', reason: 'dmarc-fail-reject' };
    if (r.dmarc.policy === 'quarantine') return { verdict: 'fail', reason: 'dmarc-fail-quarantine' };
    return { verdict: 'fail', reason: 'dmarc-fail' };
  }
  const dkimPass = r.dkim.some((d) => d.result === 'pass');
  if (r.spf.result === 'fail') return { verdict: 'fail', reason: 'spf-fail' };
  if (!dkimPass && r.dkim.some((d) => d.result === 'fail' || d.result === 'neutral' || d.result === 'policy')) {
    return { verdict: 'fail', reason: 'dkim-fail' };
  }
  if (r.spf.result === 'temperror') return { verdict: 'temperror', reason: 'spf-temperror' };
  if (r.dmarc.result === 'temperror') return { verdict: 'temperror', reason: 'dmarc-temperror' };
  if (r.dmarc.result === 'pass') return { verdict: 'pass', reason: 'dmarc-pass' };
  if (dkimPass) return { verdict: 'pass', reason: 'dkim-pass' };
  if (r.spf.result === 'pass') return { verdict: 'pass', reason: 'spf-pass' };
  return { verdict: 'none', reason: 'auth-none' };
}

/**
 * Runs SPF (client IP, HELO, MAIL FROM), DKIM, DMARC and ARC on `input.raw` with mailauth, every DNS query going
 * through `deps.resolver`. `deps.authservId` is `smtp.hostname`; it names us in the header field. Never throws:
 * an exception inside mailauth becomes verdict `temperror`, reason `filter-error:mailauth`, and a header saying
 * `temperror` for each method, so the message is tagged rather than refused or silently trusted.
 */
export async function checkAuthentication(
  input: AuthInput,
  deps: { resolver: AuthResolver; authservId: string },
): Promise<AuthVerdict> {
  // RFC 7208 §2.4: with the null sender, SPF checks the HELO identity as postmaster@<helo>.
  const sender = input.mailFrom === '' ? `postmaster@${input.helo.replace(/^\[|\]$/g, '')}` : input.mailFrom;
  try {
    const res = await authenticate(input.raw, {
      ip: input.clientIp.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, ''),
      helo: input.helo,
      sender,
      mta: deps.authservId,
      resolver: deps.resolver,
      trustReceived: false,
      disableBimi: true,
    });
    const spf = res.spf || undefined;
    const dmarc = res.dmarc || undefined;
    const arc = res.arc || undefined;
    const results: AuthResults = {
      spf: { result: spf?.status.result ?? 'none', domain: spf?.domain ?? null },
      dkim: (res.dkim?.results ?? []).map((d) => ({
        result: d.status.result,
        domain: d.signingDomain ?? null,
        selector: d.selector ?? null,
        aligned: !!d.status.aligned,
      })),
      dmarc: { result: dmarc?.status.result ?? 'none', domain: dmarc?.domain ?? null, policy: dmarcPolicy(dmarc?.policy) },
      arc: { result: arc?.status.result ?? 'none' },
    };
    // mailauth renders the field (Received-SPF first, then Authentication-Results with `mta` as authserv-id); we keep
    // only the Authentication-Results field: one field with every method (RFC 8601 §2.2).
    const text = res.headers ?? '';
    const at = text.indexOf('Authentication-Results:');
    const header = at >= 0 ? text.slice(at).replace(/\r?\n$/, '') : fallbackHeader(deps.authservId, results);
    return { step: 'auth', ...authReason(results), results, header };
  } catch {
    const results: AuthResults = {
      spf: { result: 'temperror', domain: null },
      dkim: [{ result: 'temperror', domain: null, selector: null, aligned: false }],
      dmarc: { result: 'temperror', domain: null, policy: null },
      arc: { result: 'none' },
    };
    return {
      step: 'auth',
      verdict: 'temperror',
      reason: 'filter-error:mailauth',
      results,
      header: fallbackHeader(deps.authservId, results),
    };
  }
}

function fallbackHeader(authservId: string, r: AuthResults): string {
  const rows = [`spf=${r.spf.result}`, ...r.dkim.map((d) => `dkim=${d.result}`), `arc=${r.arc.result}`, `dmarc=${r.dmarc.result}`];
  return `Authentication-Results: ${authservId};\r\n ${rows.join(';\r\n ')}`;
}

/**
 * The authserv-id of an Authentication-Results value (RFC 8601 §2.2: `[CFWS] authserv-id [CFWS authres-version]
 * (no-result / 1*resinfo)`) in canonical form (`canonicalAuthservId`); comments are skipped and a quoted-string is
 * unquoted.
 */
export function authservIdOf(value: string): string {
  let s = value;
  // Drop comments (nested parentheses included) before reading the first token.
  for (let prev = ''; prev !== s; ) {
    prev = s;
    s = s.replace(/\((?:[^()\\]|\\.)*\)/g, ' ');
  }
  s = s.trim();
  if (s.startsWith('"')) {
    const m = /^"((?:[^"\\]|\\.)*)"/.exec(s);
    return canonicalAuthservId((m?.[1] ?? '').replace(/\\(.)/g, '$1'));
  }
  return canonicalAuthservId(/^[^\s;]*/.exec(s)?.[0] ?? '');
}

/**
 * An authserv-id in the form two ids are compared in. RFC 8601 §2.5 makes it a domain name, and a reader compares
 * it as one, so each way of writing our name counts as ours: any case, a trailing (root) dot, U-labels or A-labels,
 * and whatever IDNA maps to the same name (UTS #46: full-width letters, ideographic full stops, ignored characters
 * such as a zero-width space). Header text arrives latin1-decoded (message-headers.ts): when its bytes are UTF-8
 * they are read as UTF-8 first. A value that is no domain name at all is compared lower-cased as it is.
 */
export function canonicalAuthservId(id: string): string {
  const bytes = /[\x80-\xff]/.test(id) && !/[^\x00-\xff]/.test(id) ? Buffer.from(id, 'latin1') : undefined;
  const text = (bytes && isUtf8(bytes) ? bytes.toString('utf8') : id).trim();
  return (domainToASCII(text) || text.toLowerCase()).replace(/\.+$/, '');
}

/**
 * True for an Authentication-Results field that claims to come from us. RFC 8601 §5: a border MTA must remove
 * such fields arriving from outside (they are forged, or stale), before adding its own; fields of other
 * authserv-ids stay (the downstream decides whether it trusts them). The ids are compared as domain names
 * (`canonicalAuthservId`), so `MX.Example.` or a U-label spelling of our name is removed too.
 */
export function isForgedAuthResults(field: HeaderField, authservId: string): boolean {
  if (field.key !== 'authentication-results') return false;
  const claimed = authservIdOf(field.value);
  return claimed !== '' && claimed === canonicalAuthservId(authservId);
}
