// Owns MTA-STS (RFC 8461) for outbound delivery: the recipient domain's TXT record and HTTPS policy, parsed, cached
// by max_age and the record's id, and the MX patterns a policy allows.

/** A parsed policy (RFC 8461 §3.2). */
export interface StsPolicy {
  mode: 'enforce' | 'testing' | 'none';
  /** MX patterns: a host name, or `*.` and a name (one leftmost label). Lower case, no trailing dot. */
  mx: string[];
  /** Seconds the policy may be cached (at most 31557600, one year). */
  maxAge: number;
  /** The policy text's lines as fetched, for TLS-RPT's `policy-string` (RFC 8460 §4.4). */
  lines: string[];
}

/** The largest max_age a policy may name (RFC 8461 §3.2). */
export const MAX_AGE_LIMIT = 31_557_600;

/** The largest policy body read (RFC 8461 §3.3 bounds nothing; 64 KiB is far past any real one). */
export const MAX_POLICY_BYTES = 64 * 1024;

/**
 * The `id` of a domain's `_mta-sts` TXT records (RFC 8461 §3.1): the records that begin `v=STSv1;` (each record's
 * strings joined); exactly one must remain and carry an id of 1–32 letters and digits, else there is no policy.
 */
export function stsRecordId(records: readonly string[]): string | undefined {
  const sts = records.filter((r) => /^v=STSv1\s*(;|$)/.test(r));
  if (sts.length !== 1) return undefined;
  const fields = new Map<string, string>();
  for (const part of sts[0]!.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const id = fields.get('id');
  return id !== undefined && /^[A-Za-z0-9]{1,32}$/.test(id) ? id : undefined;
}

/** Parses a policy body (RFC 8461 §3.2: `key: value` lines, CRLF or LF); an error names what is wrong. */
export function parseStsPolicy(text: string): { ok: true; policy: StsPolicy } | { ok: false; reason: string } {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  const fields = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) return { ok: false, reason: `not a "key: value" line: ${line.slice(0, 80)}` };
    const k = line.slice(0, colon).trim().toLowerCase();
    fields.set(k, [...(fields.get(k) ?? []), line.slice(colon + 1).trim()]);
  }
  if (fields.get('version')?.[0] !== 'STSv1') return { ok: false, reason: 'version is not STSv1' };
  const mode = fields.get('mode')?.[0];
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') return { ok: false, reason: `mode "${mode ?? ''}" is not enforce, testing or none` };
  const age = fields.get('max_age')?.[0] ?? '';
  if (!/^\d{1,10}$/.test(age) || Number(age) > MAX_AGE_LIMIT) return { ok: false, reason: `max_age "${age}" is not 0 to ${MAX_AGE_LIMIT}` };
  const mx = (fields.get('mx') ?? []).map((m) => m.toLowerCase().replace(/\.$/, ''));
  if (mode !== 'none' && mx.length === 0) return { ok: false, reason: 'no mx' };
  if (mx.some((m) => !/^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)+$/.test(m))) return { ok: false, reason: 'an mx pattern is not a host name' };
  return { ok: true, policy: { mode, mx, maxAge: Number(age), lines } };
}

/**
 * RFC 8461 §4.1: a pattern matches the MX host's name exactly (case aside, without the trailing dot), or, as
 * `*.suffix`, any name of one more label than `suffix` ending in it: `*.example.com` matches `mx1.example.com`, not
 * `a.b.example.com` nor `example.com`.
 */
export function mxMatches(pattern: string, host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (!pattern.startsWith('*.')) return pattern === h;
  const suffix = pattern.slice(1);
  return h.endsWith(suffix) && !h.slice(0, -suffix.length).includes('.') && h.length > suffix.length;
}

/** What routing needs of a domain now: its policy (enforce or testing), or none; a failure for TLS-RPT. */
export type StsState =
  | { kind: 'policy'; policy: StsPolicy }
  | { kind: 'none' }
  /** A record says there is a policy, but none could be fetched or parsed, and none is cached (RFC 8461 §5). */
  | { kind: 'failed'; result: 'sts-policy-fetch-error' | 'sts-policy-invalid' | 'sts-webpki-invalid'; reason: string };

export interface MtaStsDeps {
  /** The domain's `_mta-sts` TXT records, each joined; undefined when the look-up failed for a while (DNS down). */
  txt: (name: string) => Promise<string[] | undefined>;
  /**
   * The policy body of `https://mta-sts.<domain>/.well-known/mta-sts.txt`, fetched with a verified certificate and
   * no redirect; rejects with an error whose `result` names the TLS-RPT failure type.
   */
  fetch: (domain: string) => Promise<string>;
  now: () => number;
  /** Domains whose policy is kept (the least recently used goes first). */
  maxEntries?: number;
}

interface Cached {
  id: string;
  policy: StsPolicy;
  expires: number;
}

/** After a failed fetch with nothing cached, the domain is asked again no sooner than this. */
export const FETCH_RETRY_MS = 5 * 60_000;

/**
 * Creates the policy source. RFC 8461 §5.1: each delivery looks up the TXT record (the DNS cache answers most); a
 * policy is fetched when nothing unexpired is cached or the record's id changed, and a cached one stands while it
 * has not expired even if the record or the fetch fails (an attacker who removes the record cannot downgrade mail
 * to a domain we have seen). A fetch that fails with nothing cached means no policy, asked again after FETCH_RETRY_MS.
 */
export function createMtaSts(deps: MtaStsDeps) {
  const max = deps.maxEntries ?? 10_000;
  const cache = new Map<string, Cached>();
  const failedUntil = new Map<string, { until: number; state: StsState }>();
  const inFlight = new Map<string, Promise<StsState>>();

  function remember(domain: string, c: Cached): void {
    cache.delete(domain);
    cache.set(domain, c);
    while (cache.size > max) cache.delete(cache.keys().next().value!);
  }

  async function resolve(domain: string): Promise<StsState> {
    const now = deps.now();
    const cached = cache.get(domain);
    const live = cached && cached.expires > now ? cached : undefined;
    const records = await deps.txt(`_mta-sts.${domain}`);
    const id = records ? stsRecordId(records) : undefined;
    if (live && (id === undefined || id === live.id)) {
      remember(domain, live);
      return stateOf(live.policy);
    }
    if (id === undefined) return { kind: 'none' };
    const failed = failedUntil.get(domain);
    if (!live && failed && failed.until > now) return failed.state;
    try {
      const parsed = parseStsPolicy(await deps.fetch(domain));
      if (!parsed.ok) throw Object.assign(new Error(`MTA-STS policy of ${domain} is invalid: ${parsed.reason}`), { result: 'sts-policy-invalid' });
      failedUntil.delete(domain);
      remember(domain, { id, policy: parsed.policy, expires: now + parsed.policy.maxAge * 1000 });
      return stateOf(parsed.policy);
    } catch (err) {
      if (live) return stateOf(live.policy);
      const e = err as Error & { result?: string };
      const result = e.result === 'sts-policy-invalid' || e.result === 'sts-webpki-invalid' ? e.result : 'sts-policy-fetch-error';
      const state: StsState = { kind: 'failed', result, reason: e.message };
      failedUntil.set(domain, { until: now + FETCH_RETRY_MS, state });
      while (failedUntil.size > max) failedUntil.delete(failedUntil.keys().next().value!);
      return state;
    }
  }

  return {
    /** The domain's state now; concurrent asks for one domain share one look-up. */
    policyFor(domain: string): Promise<StsState> {
      const d = domain.toLowerCase().replace(/\.$/, '');
      let p = inFlight.get(d);
      if (!p) {
        p = resolve(d).finally(() => inFlight.delete(d));
        inFlight.set(d, p);
      }
      return p;
    },
  };
}

function stateOf(policy: StsPolicy): StsState {
  return policy.mode === 'none' ? { kind: 'none' } : { kind: 'policy', policy };
}

export type MtaSts = ReturnType<typeof createMtaSts>;
