// Owns POST /tx/v1/check-domain's checks: DKIM records, SPF for our sending address, lockdown, sender-domain MX/A,
// and the return path's alignment.
import crypto from 'node:crypto';
import { spf } from 'mailauth/lib/spf/index.js';
import type { LockdownVerdict } from '../../filters/lockdown.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { DkimKeyRow, DkimKeyStore } from '../../storage/ports/dkim-keys.js';
import { mailauthResolver, type DnsResolver } from '../delivery/dns-resolver.js';
import type { Alignment } from '../delivery/return-path-alignment.js';
import { normalizePrivateKey } from './dkim-sign.js';

export interface CheckDomainDeps {
  resolver: DnsResolver;
  dkim: DkimKeyStore;
  lockdown: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  hostname: string;
  /** The address receivers see our mail come from; SPF is evaluated for it. */
  publicIp: string | undefined;
  /** How the domain's VERP return path aligns (bin/wiring-return-path.ts); undefined without outbound.return_path_domain. */
  returnPath?: (domain: string) => Promise<Alignment | undefined>;
}

export interface CheckDomainRequest {
  domain: string;
  dkim_settings?: { dkim_domain?: string; dkim_selector?: string; dkim_private_key?: string }[];
  sender_id?: string;
  envelope_from_domain?: string;
}

type Verdict = 'passed' | 'failed';

/** api.md §2.1 spf verdict words for mailauth's SPF results (RFC 7208 §2.6). */
const SPF_VERDICT: Record<string, string> = {
  pass: 'passed',
  fail: 'failed',
  softfail: 'soft failed',
  temperror: 'temporary error',
  permerror: 'permanent error',
  neutral: 'neutral',
  none: 'none',
};

/** The p= value of a DKIM key record (RFC 6376 §3.6.1), or undefined. */
function dkimPublicKey(txt: string[][]): string | undefined {
  for (const chunks of txt) {
    const record = chunks.join('');
    const tags = new Map(
      record.split(';').map((t) => {
        const eq = t.indexOf('=');
        return [t.slice(0, eq).trim().toLowerCase(), t.slice(eq + 1).replace(/\s+/g, '')] as const;
      }),
    );
    if (tags.has('p')) return tags.get('p');
  }
  return undefined;
}

function publicFromPrivate(privateKey: string): string {
  return crypto
    .createPublicKey(normalizePrivateKey(privateKey))
    .export({ type: 'spki', format: 'der' })
    .toString('base64');
}

/**
 * `check_results.return_path` (a Sluice field; clients of the API ignore it): the domain this domain's mail leaves
 * with as its envelope sender, and whether SPF on it aligns with the domain for DMARC (RFC 7489 §3.1.2).
 */
function returnPathResult(a: Alignment): { domain: string; verdict: Verdict; reason?: string } {
  if (a.aligned) return { domain: a.returnPathDomain, verdict: 'passed' };
  const rp = a.returnPathDomain;
  const publish = `publish a CNAME record ${a.name} pointing at ${rp}, and mail will leave with ${a.name}`;
  const reason: Record<typeof a.reason, string> = {
    // Relaxed alignment (RFC 7489 §3.1.2) may still hold when both share an organizational domain; DKIM can pass DMARC alone.
    'no-prefix': `mail leaves with the return path domain ${rp}, whose SPF aligns with this domain only if both share an organizational domain`,
    unchecked: `not looked up yet; ${publish}`,
    'no-cname': `${a.name} has no CNAME record; ${publish}`,
    'other-target': `${a.name} is a CNAME of ${a.detail}, not of ${rp}; ${publish}`,
    'dns-error': `DNS error looking up ${a.name} (${a.detail}); mail leaves with ${rp} until it answers`,
  };
  return { domain: rp, verdict: 'failed', reason: reason[a.reason] };
}

/** Runs every check of check-domain for `account`; never throws for DNS problems (they become verdicts). */
export async function runCheckDomain(deps: CheckDomainDeps, account: AccountRow, req: CheckDomainRequest) {
  const domain = req.domain.toLowerCase().replace(/\.$/, '');
  const accountIds = account.parent_id === null ? [account.id] : [account.id, account.parent_id];

  // DKIM: the keys given in the request, else the account's stored keys for the domain.
  type Probe = { dkim_domain: string; dkim_selector: string; expected: string | undefined; status?: string };
  const probes: Probe[] = [];
  if (req.dkim_settings && req.dkim_settings.length > 0) {
    for (const s of req.dkim_settings) {
      const d = (s.dkim_domain ?? domain).toLowerCase();
      const selector = s.dkim_selector ?? '';
      if (s.dkim_private_key) {
        probes.push({ dkim_domain: d, dkim_selector: selector, expected: publicFromPrivate(s.dkim_private_key), status: 'provided' });
      } else {
        let row: DkimKeyRow | undefined;
        for (const id of accountIds) if ((row = await deps.dkim.find(id, d, selector))) break;
        probes.push({ dkim_domain: d, dkim_selector: selector, expected: row?.public_key, status: row?.status });
      }
    }
  } else {
    for (const id of accountIds) {
      for (const row of await deps.dkim.list(id, domain, { limit: 100, offset: 0 })) {
        if (row.status === 'active' || row.status === 'rotated') {
          probes.push({ dkim_domain: domain, dkim_selector: row.selector, expected: row.public_key, status: row.status });
        }
      }
    }
  }
  const dkim = await Promise.all(
    probes.map(async (p) => {
      const base = { dkim_domain: p.dkim_domain, dkim_selector: p.dkim_selector, ...(p.status ? { dkim_key_status: p.status } : {}) };
      if (!p.dkim_selector) return { ...base, verdict: 'failed' as Verdict, reason: 'dkim_selector is required' };
      if (!p.expected) return { ...base, verdict: 'failed' as Verdict, reason: 'no such DKIM key for this account' };
      const res = await deps.resolver.txt(`${p.dkim_selector}._domainkey.${p.dkim_domain}`);
      if (!res.ok) {
        return { ...base, verdict: 'failed' as Verdict, reason: res.kind === 'temp' ? `DNS error: ${res.message}` : 'no DKIM record published' };
      }
      const published = dkimPublicKey(res.records);
      if (published === undefined) return { ...base, verdict: 'failed' as Verdict, reason: 'the TXT record has no p= tag' };
      if (published !== p.expected) {
        return { ...base, verdict: 'failed' as Verdict, reason: 'the published public key does not match the key' };
      }
      return { ...base, verdict: 'passed' as Verdict };
    }),
  );

  // SPF: does the domain authorize the address we send from? (RFC 7208)
  let spfResult: { verdict: string; reason?: string; spfRecord?: string; spfRecordError?: string };
  if (!deps.publicIp) {
    spfResult = { verdict: 'unknown', reason: 'outbound.public_ip is not configured, so there is no sending address to check' };
  } else {
    const sender = `postmaster@${(req.envelope_from_domain ?? domain).toLowerCase()}`;
    const r = await spf({
      sender,
      ip: deps.publicIp,
      helo: deps.hostname,
      mta: deps.hostname,
      resolver: mailauthResolver(deps.resolver),
    });
    const result = r.status.result as string;
    spfResult = {
      verdict: SPF_VERDICT[result] ?? 'unknown',
      ...(r.status.comment ? { reason: String(r.status.comment) } : {}),
      ...(r.rr ? { spfRecord: String(r.rr) } : {}),
      ...(result === 'permerror' ? { spfRecordError: String(r.status.comment ?? 'permanent error') } : {}),
    };
  }

  const lock = await deps.lockdown(domain, account);
  const domainLockdown = {
    verdict: (lock.action === 'pass' ? 'passed' : 'failed') as Verdict,
    reason: lock.reason,
  };

  // Sender domain: it must be able to receive replies and bounces (an MX, or an address for the implicit MX).
  const [mx, a, aaaa] = await Promise.all([deps.resolver.mx(domain), deps.resolver.a(domain), deps.resolver.aaaa(domain)]);
  const mxOk = mx.ok && mx.records.length > 0;
  const aOk = (a.ok && a.records.length > 0) || (aaaa.ok && aaaa.records.length > 0);
  const senderDomain = {
    mx: mxOk ? { verdict: 'passed' as Verdict } : { verdict: 'failed' as Verdict, reason: mx.ok ? 'no MX records' : mx.kind === 'temp' ? `DNS error: ${mx.message}` : 'no MX records' },
    a: aOk ? { verdict: 'passed' as Verdict } : { verdict: 'failed' as Verdict, reason: 'no A or AAAA records' },
    verdict: (mxOk || aOk ? 'passed' : 'failed') as Verdict,
  };

  const alignment = await deps.returnPath?.(domain);
  const returnPath = alignment && returnPathResult(alignment);

  return {
    check_results: { dkim, domain_lockdown: domainLockdown, sender_domain: senderDomain, spf: spfResult, ...(returnPath ? { return_path: returnPath } : {}) },
    references: [] as string[],
  };
}
