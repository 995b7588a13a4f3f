// Owns the inbound lists port: safelist/blocklist entries at account, domain and recipient level, and the 16-byte
// key encoding of IP addresses and CIDR ranges that lets a client address match with one range query.
import { isIP } from 'node:net';

export type ListLevel = 'account' | 'domain' | 'recipient';
export type ListAction = 'blocklist' | 'safelist';
/**
 * The SDK's three item types. CIDR ranges are `ip_address` items whose text carries the prefix (`192.0.2.0/24`):
 * the SDK types `item_type` as exactly these three strings, so a fourth type would break typed clients.
 */
export type ListItemType = 'domain' | 'email_address' | 'ip_address';

export interface ListEntryRow {
  id: number;
  account_id: number;
  level: ListLevel;
  /** '' (account level), the domain name (domain level) or the recipient address (recipient level). */
  scope: string;
  domain_id: number | null;
  item: string;
  item_type: ListItemType;
  action: ListAction;
  created_at: number;
}

/** Which list a call reads or writes: the account's own, one domain's, or one recipient's (on one domain). */
export type ListScope =
  | { level: 'account'; accountId: number }
  | { level: 'domain'; accountId: number; domainId: number; domain: string }
  | { level: 'recipient'; accountId: number; domainId: number; recipient: string };

/** Entries that matched one message, per level; a pure filter (filters/inbound-lists.ts) decides precedence. */
export interface ListMatches {
  account: ListEntryRow[];
  domain: ListEntryRow[];
  recipient: ListEntryRow[];
}

// ---------------------------------------------------------------------------------------------------------------
// IP keys. IPv4 is mapped into ::ffff:0:0/96 (RFC 4291 §2.5.5.2), so one 16-byte space holds both families and a
// socket address reported as ::ffff:192.0.2.1 matches an entry written as 192.0.2.1.

const V4_MAPPED_PREFIX = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);

function isV4Mapped(key: Buffer): boolean {
  return key.subarray(0, 12).equals(V4_MAPPED_PREFIX);
}

/** 16-byte key of an IPv4 or IPv6 address (brackets allowed, zone ids refused), or undefined when invalid. */
export function ipKey(text: string): Buffer | undefined {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const family = isIP(t);
  if (family === 4) {
    const key = Buffer.alloc(16);
    V4_MAPPED_PREFIX.copy(key);
    t.split('.').forEach((p, i) => (key[12 + i] = Number(p)));
    return key;
  }
  if (family !== 6 || t.includes('%')) return undefined;
  let body = t;
  // An embedded dotted quad (::ffff:192.0.2.1) stands for the last two groups: rewrite it as hex first.
  const lastColon = body.lastIndexOf(':');
  if (body.slice(lastColon + 1).includes('.')) {
    const v4 = ipKey(body.slice(lastColon + 1));
    if (!v4) return undefined;
    body = `${body.slice(0, lastColon + 1)}${v4.readUInt16BE(12).toString(16)}:${v4.readUInt16BE(14).toString(16)}`;
  }
  const halves = body.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0] ?? '');
  const rest = halves.length > 1 ? parse(halves[1] ?? '') : [];
  const gap = new Array<number>(Math.max(0, 8 - head.length - rest.length)).fill(0);
  const groups = halves.length > 1 ? [...head, ...gap, ...rest] : head;
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
  const key = Buffer.alloc(16);
  groups.forEach((g, i) => key.writeUInt16BE(g, i * 2));
  return key;
}

/** RFC 5952 §4 text of a 16-byte IPv6 key: lower case, no leading zeros, longest zero run (≥ 2 groups) as "::". */
function formatV6(key: Buffer): string {
  const groups = Array.from({ length: 8 }, (_, i) => key.readUInt16BE(i * 2));
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/**
 * Parses an IP address or CIDR range (`192.0.2.0/24`, `2001:db8::/32`) into its canonical item text and its
 * inclusive key range. Host bits under the prefix are cleared (`192.0.2.7/24` → `192.0.2.0/24`); a full-length
 * prefix is a single address (`/32`, `/128` dropped); IPv4-mapped IPv6 is written as IPv4. Undefined when invalid.
 */
export function parseIpItem(text: string): { item: string; start: Buffer; end: Buffer } | undefined {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  if (addr.startsWith('[')) return undefined;
  const key = ipKey(addr);
  if (!key) return undefined;
  const v4 = isIP(addr) === 4 || isV4Mapped(key);
  let prefix = 128;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^[0-9]{1,3}$/.test(p)) return undefined;
    prefix = Number(p) + (isIP(addr) === 4 ? 96 : 0);
    if (prefix > 128) return undefined;
  }
  const mapped = v4 && prefix >= 96;
  const start = Buffer.alloc(16);
  const end = Buffer.alloc(16);
  for (let i = 0; i < 16; i++) {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    const mask = (0xff << (8 - bits)) & 0xff;
    start[i] = key[i]! & mask;
    end[i] = (key[i]! & mask) | (~mask & 0xff);
  }
  const base = mapped ? Array.from(start.subarray(12)).join('.') : formatV6(start);
  const full = prefix === 128;
  const item = full ? base : `${base}/${mapped ? prefix - 96 : prefix}`;
  return { item, start, end };
}

/** Every domain a sender domain falls under, itself first: `a.b.example` → `a.b.example`, `b.example`, `example`. */
export function domainAndParents(domain: string): string[] {
  const labels = domain.split('.');
  return labels.map((_, i) => labels.slice(i).join('.')).filter((d) => d !== '');
}

/** Where a scope's entries are kept: `scope` ('' / the domain / the recipient) and the domain they go away with. */
export function listScopeKey(scope: ListScope): { scope: string; domainId: number | null } {
  if (scope.level === 'account') return { scope: '', domainId: null };
  if (scope.level === 'domain') return { scope: scope.domain, domainId: scope.domainId };
  return { scope: scope.recipient, domainId: scope.domainId };
}

/** The key range an entry is stored with: an ip_address item's (it must parse), null for other types. */
export function entryRange(entry: { item: string; itemType: ListItemType }): { start: Buffer; end: Buffer } | null {
  if (entry.itemType !== 'ip_address') return null;
  const range = parseIpItem(entry.item);
  if (!range) throw new Error(`not an IP item: ${entry.item}`);
  return range;
}

/** A message's facts as matchLists compares them. */
export interface MatchFacts {
  /** The sender address, lower-cased, or null. */
  sender: string | null;
  /** The sender domain and its parents (lower-case, no trailing dot); empty when unknown. */
  senderDomains: string[];
  /** The recipient, lower-cased, or null. */
  recipient: string | null;
  /** The client address's 16-byte key, or null when absent or not an address. */
  ip: Buffer | null;
}

/** The facts matchLists compares, from its query: the sender domain falls back to the address's domain. */
export function matchFacts(q: { recipient?: string; clientIp?: string; senderAddress?: string; senderDomain?: string }): MatchFacts {
  const sender = q.senderAddress ? q.senderAddress.toLowerCase() : null;
  const fromAddress = sender && sender.includes('@') ? sender.slice(sender.lastIndexOf('@') + 1) : '';
  const senderDomain = (q.senderDomain ?? fromAddress).toLowerCase().replace(/\.$/, '');
  return {
    sender,
    senderDomains: senderDomain ? domainAndParents(senderDomain) : [],
    recipient: q.recipient ? q.recipient.toLowerCase() : null,
    ip: q.clientIp ? (ipKey(q.clientIp) ?? null) : null,
  };
}

/** Matched entries grouped by level, in the order given. */
export function groupMatches(rows: readonly ListEntryRow[]): ListMatches {
  return {
    account: rows.filter((r) => r.level === 'account'),
    domain: rows.filter((r) => r.level === 'domain'),
    recipient: rows.filter((r) => r.level === 'recipient'),
  };
}

/** List entries one account holds at most unless told otherwise (the default of inbound.list_entries_per_account). */
export const DEFAULT_MAX_LIST_ENTRIES = 10_000;

/**
 * Safelist/blocklist entries. Items must already be canonical (see the list routes: lower-case A-label domains,
 * lower-cased addresses, `parseIpItem` text for IPs). Every query is scoped by account.
 */
export interface InboundListStore {
  /**
   * The entries of one list (blocklist or safelist) at one scope, oldest first: by created_at (the `now` the entry
   * was added at; moving it to the other list keeps it), then id.
   */
  listEntries(scope: ListScope, action: ListAction): Promise<ListEntryRow[]>;
  /**
   * Puts `item` on the `action` list at `scope`. An item is on at most one list per scope: adding it to the
   * safelist takes it off that scope's blocklist and vice versa. Idempotent; returns the stored entry, or 'full'
   * (nothing written) when the item is new and the account already holds `maxEntries` entries at all its levels
   * and scopes together (`inbound.list_entries_per_account`; default DEFAULT_MAX_LIST_ENTRIES).
   */
  addEntry(
    scope: ListScope,
    entry: { item: string; itemType: ListItemType; action: ListAction },
    now: number,
    maxEntries?: number,
  ): Promise<ListEntryRow | 'full'>;
  /** Removes `item` from the `action` list at `scope`; false when it was not there. */
  removeEntry(scope: ListScope, action: ListAction, item: string): Promise<boolean>;
  /**
   * Every entry of the domain owner's lists that matches one message, grouped by level: the account's lists, the
   * domain's (`domain`: the provisioned domain's name, not an alias) and the recipient's (`recipient`: the address as
   * stored by the recipient-level API, i.e. lower-cased on the provisioned domain). An entry matches when it is the
   * sender address (case-insensitive), the sender domain or a parent domain of it, or an IP range holding the client
   * address. Absent facts match nothing, so the MX may call this at connect, MAIL and RCPT.
   */
  matchLists(q: { accountId: number; domain: string; recipient?: string; clientIp?: string; senderAddress?: string; senderDomain?: string }): Promise<ListMatches>;
}
