// Owns the Domain Lockdown check with its DNS look-up cache: may this account send From this domain now?
import { decideLockdown, type LockdownVerdict } from '../../filters/lockdown.js';
import type { AccountRow, AccountStore } from '../../storage/ports/accounts.js';
import type { LockdownStore } from '../../storage/ports/lockdown.js';
import type { DnsResolver } from '../delivery/dns-resolver.js';

/** TXT answers are cached this long: one look-up per domain per minute, not one per message. */
export const LOCKDOWN_CACHE_MS = 60_000;

type TxtAnswer = { ok: true; records: string[][] } | { ok: false; kind: 'nxdomain' | 'nodata' | 'temp' };

/** Creates the checker used by the send API and SMTP submission. */
export function createLockdownChecker(deps: {
  /** `outbound.lockdown`, read at each check so a reload (SIGHUP) applies to the next message. */
  mode: () => 'dns' | 'off';
  resolver: DnsResolver;
  allow: Pick<LockdownStore, 'isAllowed'>;
  accounts: Pick<AccountStore, 'findById'>;
  now: () => number;
}) {
  const cache = new Map<string, { at: number; answer: Promise<TxtAnswer> }>();

  function lookup(domain: string): Promise<TxtAnswer> {
    const now = deps.now();
    const hit = cache.get(domain);
    if (hit && now - hit.at < LOCKDOWN_CACHE_MS) return hit.answer;
    const answer = deps.resolver.txt(`_sluice.${domain}`).then((r) => (r.ok ? r : { ok: false as const, kind: r.kind }));
    // A temporary failure is not cached: the next message asks again.
    void answer.then((r) => { if (!r.ok && r.kind === 'temp') cache.delete(domain); });
    cache.set(domain, { at: now, answer });
    if (cache.size > 10_000) cache.delete(cache.keys().next().value as string);
    return answer;
  }

  return async (domain: string, account: AccountRow): Promise<LockdownVerdict> => {
    const mode = deps.mode();
    if (mode === 'off') return { action: 'pass', reason: 'lockdown-off' };
    const ids = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
    if (await deps.allow.isAllowed(ids, domain)) return { action: 'pass', reason: 'lockdown-operator-allowed' };
    const handles = [account.handle];
    if (account.parent_id !== null) {
      const parent = await deps.accounts.findById(account.parent_id);
      if (parent) handles.push(parent.handle);
    }
    return decideLockdown({ mode, operatorAllowed: false, handles, dns: await lookup(domain) });
  };
}
