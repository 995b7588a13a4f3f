// Owns the inbound_list_entries table on PostgreSQL (the InboundLists port): safelist/blocklist entries at account,
// domain and recipient level, matched by address, parent domain and IP range (16-byte bytea keys).
import {
  DEFAULT_MAX_LIST_ENTRIES, entryRange, groupMatches, listScopeKey, matchFacts, type InboundListStore, type ListAction,
  type ListEntryRow, type ListItemType, type ListScope,
} from '../ports/inbound-lists.js';
import { lockAccounts } from './account-lock.js';
import type { Pg, Query } from './database.js';

/** The columns of the port's row (ip_start/ip_end stay inside storage). */
const COLUMNS = 'id, account_id, level, scope, domain_id, item, item_type, action, created_at';

/**
 * Puts one entry on its list at its scope inside the caller's transaction (moving it off the other list), unbounded:
 * the caller has counted. Shared by addEntry and the recipients' creation (inbound-recipients.ts).
 */
export async function putEntry(q: Query, scope: ListScope, entry: { item: string; itemType: ListItemType; action: ListAction }, now: number): Promise<ListEntryRow> {
  const k = listScopeKey(scope);
  const range = entryRange(entry);
  const [row] = await q<ListEntryRow>(
    `INSERT INTO inbound_list_entries (account_id, level, scope, domain_id, item, item_type, action, ip_start, ip_end, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (account_id, level, scope, item) DO UPDATE SET action = excluded.action
     RETURNING ${COLUMNS}`,
    [scope.accountId, scope.level, k.scope, k.domainId, entry.item, entry.itemType, entry.action, range?.start ?? null, range?.end ?? null, now],
  );
  return row!;
}

/** The PostgreSQL InboundLists port. Every query is scoped by account. */
export function createPgInboundListStore(pg: Pg): InboundListStore {
  return {
    async listEntries(scope, action) {
      return pg.query<ListEntryRow>(
        `SELECT ${COLUMNS} FROM inbound_list_entries WHERE account_id = $1 AND level = $2 AND scope = $3 AND action = $4
         ORDER BY created_at, id`,
        [scope.accountId, scope.level, listScopeKey(scope).scope, action],
      );
    },

    // The per-account bound (issue 31) holds across nodes: the account's row lock is taken before counting, so two
    // nodes adding the last free entry run one after the other and the second is told 'full'.
    async addEntry(scope, entry, now, maxEntries = DEFAULT_MAX_LIST_ENTRIES) {
      const k = listScopeKey(scope);
      return pg.tx(async (q) => {
        await lockAccounts(q, [scope.accountId]);
        const [room] = await q<{ has: boolean; n: number }>(
          `SELECT EXISTS (SELECT 1 FROM inbound_list_entries WHERE account_id = $1 AND level = $2 AND scope = $3 AND item = $4) AS has,
             (SELECT count(*) FROM inbound_list_entries WHERE account_id = $1) AS n`,
          [scope.accountId, scope.level, k.scope, entry.item],
        );
        // A move between lists is not new: only a new item counts against the bound.
        if (!room!.has && room!.n >= maxEntries) return 'full' as const;
        return putEntry(q, scope, entry, now);
      });
    },

    async removeEntry(scope, action, item) {
      const n = await pg.exec(
        'DELETE FROM inbound_list_entries WHERE account_id = $1 AND level = $2 AND scope = $3 AND action = $4 AND item = $5',
        [scope.accountId, scope.level, listScopeKey(scope).scope, action, item],
      );
      return n > 0;
    },

    async matchLists(q) {
      const f = matchFacts(q);
      const rows = await pg.query<ListEntryRow>(
        `SELECT ${COLUMNS} FROM inbound_list_entries
         WHERE account_id = $1
           AND ((level = 'account' AND scope = '') OR (level = 'domain' AND scope = $2)
                OR (level = 'recipient' AND scope = $3))
           AND ((item_type = 'email_address' AND item = $4)
                OR (item_type = 'domain' AND item = ANY ($5::text[]))
                OR (item_type = 'ip_address' AND ip_start <= $6 AND ip_end >= $6))
         ORDER BY id`,
        [q.accountId, q.domain, f.recipient, f.sender, f.senderDomains, f.ip],
      );
      return groupMatches(rows);
    },
  };
}
