// Owns the inbound_list_entries table: safelist/blocklist entries at account, domain and recipient level, and
// the 16-byte key encoding of IP addresses and CIDR ranges that lets a client address match with one range query.
import {
  DEFAULT_MAX_LIST_ENTRIES, entryRange, groupMatches, listScopeKey as scopeKey, matchFacts, type ListAction,
  type ListEntryRow, type ListItemType, type ListMatches, type ListScope,
} from '../ports/inbound-lists.js';
import type { Db } from './database.js';

/**
 * Repository over list entries. Items must already be canonical (see the list routes: lower-case A-label domains,
 * lower-cased addresses, `parseIpItem` text for IPs). Every query is scoped by account.
 */
export function createInboundListStore(db: Db) {
  const s = {
    // inbound_list_entries_listed (migration 19) walks one list in this order: no sort.
    list: db.prepare(
      `SELECT * FROM inbound_list_entries WHERE account_id = @account AND level = @level AND scope = @scope
         AND action = @action ORDER BY created_at, id`,
    ),
    upsert: db.prepare(
      `INSERT INTO inbound_list_entries (account_id, level, scope, domain_id, item, item_type, action, ip_start,
         ip_end, created_at)
       VALUES (@account, @level, @scope, @domain_id, @item, @item_type, @action, @ip_start, @ip_end, @now)
       ON CONFLICT (account_id, level, scope, item) DO UPDATE SET action = excluded.action
       RETURNING *`,
    ),
    // Is the item there already (at this scope, on either list)? The unique key answers it.
    has: db.prepare('SELECT 1 FROM inbound_list_entries WHERE account_id = @account AND level = @level AND scope = @scope AND item = @item').pluck(),
    // The account's entries, counted on the first column of inbound_list_entries_listed (migration 19).
    count: db.prepare('SELECT count(*) FROM inbound_list_entries WHERE account_id = ?').pluck(),
    remove: db.prepare(
      `DELETE FROM inbound_list_entries WHERE account_id = @account AND level = @level AND scope = @scope
         AND action = @action AND item = @item`,
    ),
    match: db.prepare(
      `SELECT id, account_id, level, scope, domain_id, item, item_type, action, created_at
       FROM inbound_list_entries
       WHERE account_id = @account
         AND ((level = 'account' AND scope = '') OR (level = 'domain' AND scope = @domain)
              OR (level = 'recipient' AND scope = @recipient))
         AND ((item_type = 'email_address' AND item = @sender)
              OR (item_type = 'domain' AND item IN (SELECT value FROM json_each(@sender_domains)))
              OR (item_type = 'ip_address' AND ip_start <= @ip AND ip_end >= @ip))
       ORDER BY id`,
    ),
  };

  return {
    /** The entries of one list (blocklist or safelist) at one scope, oldest first (created_at, then id). */
    listEntries(scope: ListScope, action: ListAction): ListEntryRow[] {
      const k = scopeKey(scope);
      return s.list.all({ account: scope.accountId, level: scope.level, scope: k.scope, action }) as ListEntryRow[];
    },

    /**
     * Puts `item` on the `action` list at `scope`. An item is on at most one list per scope: adding it to the
     * safelist takes it off that scope's blocklist and vice versa. Idempotent; returns the stored entry.
     */
    addEntry(
      scope: ListScope,
      entry: { item: string; itemType: ListItemType; action: ListAction },
      now: number,
      maxEntries = DEFAULT_MAX_LIST_ENTRIES,
    ): ListEntryRow | 'full' {
      const k = scopeKey(scope);
      const range = entryRange(entry);
      // The per-account bound (issue 31): a new item past it is refused; moving an item between lists is not new.
      const key = { account: scope.accountId, level: scope.level, scope: k.scope, item: entry.item };
      if (s.has.get(key) === undefined && (s.count.get(scope.accountId) as number) >= maxEntries) return 'full';
      const row = s.upsert.get({
        account: scope.accountId,
        level: scope.level,
        scope: k.scope,
        domain_id: k.domainId,
        item: entry.item,
        item_type: entry.itemType,
        action: entry.action,
        ip_start: range?.start ?? null,
        ip_end: range?.end ?? null,
        now,
      }) as ListEntryRow & { ip_start?: unknown; ip_end?: unknown };
      const { ip_start: _s, ip_end: _e, ...clean } = row;
      return clean;
    },

    /** Removes `item` from the `action` list at `scope`; false when it was not there. */
    removeEntry(scope: ListScope, action: ListAction, item: string): boolean {
      const k = scopeKey(scope);
      return s.remove.run({ account: scope.accountId, level: scope.level, scope: k.scope, action, item }).changes > 0;
    },

    /**
     * Every entry of the domain owner's lists that matches one message, grouped by level: the account's lists, the
     * domain's (`domain`: the provisioned domain's name, not an alias) and the recipient's (`recipient`: the
     * address as stored by the recipient-level API, i.e. lower-cased on the provisioned domain). An entry matches
     * when it is the sender address (case-insensitive), the sender domain or a parent domain of it, or an IP range
     * holding the client address. Absent facts match nothing, so the MX may call this at connect, MAIL and RCPT.
     */
    matchLists(q: {
      accountId: number;
      domain: string;
      recipient?: string;
      clientIp?: string;
      senderAddress?: string;
      senderDomain?: string;
    }): ListMatches {
      const f = matchFacts(q);
      const rows = s.match.all({
        account: q.accountId,
        domain: q.domain,
        recipient: f.recipient,
        sender: f.sender,
        sender_domains: JSON.stringify(f.senderDomains),
        ip: f.ip,
      }) as ListEntryRow[];
      return groupMatches(rows);
    },
  };
}

export type InboundListStore = ReturnType<typeof createInboundListStore>;
