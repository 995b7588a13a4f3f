// Owns the Domain Lockdown decision: may this account send mail From this domain? (api.md decisions table)

export type LockdownVerdict =
  | { action: 'pass'; reason: 'lockdown-off' | 'lockdown-operator-allowed' | 'lockdown-dns-authorized' }
  | { action: 'reject'; reason: 'lockdown-no-record' | 'lockdown-not-authorized' | 'lockdown-dns-error' };

/**
 * Parses the TXT strings at `_sluice.<domain>`: records of the form `v=sluice1 auth=<handle> [auth=<handle>…]`
 * (several records allowed; other TXT records are ignored). Returns the authorized handles, lower-cased.
 */
export function parseLockdownRecords(txt: string[][]): string[] {
  const handles: string[] = [];
  for (const chunks of txt) {
    const record = chunks.join('').trim();
    const tags = record.split(/\s+/);
    if (tags[0]?.toLowerCase() !== 'v=sluice1') continue;
    for (const tag of tags.slice(1)) {
      const m = /^auth=([a-z0-9]{3,128})$/i.exec(tag);
      if (m) handles.push((m[1] as string).toLowerCase());
    }
  }
  return handles;
}

/**
 * Decides whether an account may send From `domain`. `handles` are the sending account's handle and, for a
 * sub-account, its parent's (a parent's authorization covers its sub-accounts). `dns` is the TXT look-up result.
 * A DNS failure rejects (fail closed): the API answers 403 and the client may retry.
 */
export function decideLockdown(input: {
  mode: 'dns' | 'off';
  operatorAllowed: boolean;
  handles: string[];
  dns: { ok: true; records: string[][] } | { ok: false; kind: 'nxdomain' | 'nodata' | 'temp' };
}): LockdownVerdict {
  if (input.mode === 'off') return { action: 'pass', reason: 'lockdown-off' };
  if (input.operatorAllowed) return { action: 'pass', reason: 'lockdown-operator-allowed' };
  if (!input.dns.ok) {
    return input.dns.kind === 'temp'
      ? { action: 'reject', reason: 'lockdown-dns-error' }
      : { action: 'reject', reason: 'lockdown-no-record' };
  }
  const allowed = parseLockdownRecords(input.dns.records);
  if (allowed.length === 0) return { action: 'reject', reason: 'lockdown-no-record' };
  return input.handles.some((h) => allowed.includes(h.toLowerCase()))
    ? { action: 'pass', reason: 'lockdown-dns-authorized' }
    : { action: 'reject', reason: 'lockdown-not-authorized' };
}

/**
 * The two ways to authorize `domain` for the account `handle`, as the tail of a refusal (`: publish … or run …`),
 * for the refusals a record or an operator decision fixes; '' for a DNS failure (retrying is the fix) and passes.
 */
export function howToAuthorize(reason: LockdownVerdict['reason'], domain: string, handle: string): string {
  if (reason !== 'lockdown-no-record' && reason !== 'lockdown-not-authorized') return '';
  return `: publish the TXT record _sluice.${domain} "v=sluice1 auth=${handle}", or have the operator run ` +
    `\`sluice lockdown allow --account ${handle} --domain ${domain}\``;
}
