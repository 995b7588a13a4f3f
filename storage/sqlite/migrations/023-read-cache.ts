// Owns the SQL of migration 23 (issue 32, less work per message): indexes that spare the DKIM key and suppression
// look-ups a sort, and the generation counters that let each connection cache what it reads per message.
//
// dkim_keys: the signing key look-ups (dkim-keys.ts `active`, `inGrace`) filter on account, domain and status and
// take the newest; with the sort key in the index SQLite reads the first entry backwards instead of sorting the
// account's keys in a temporary B-tree.
// suppressions: `isSuppressed` finds a recipient's entries among the sender's accounts, oldest first; the index
// leads with the recipient and holds the order and the account, so the first match ends the search, no sort.
//
// cache_generations: one counter per group of cached tables, bumped by a trigger on every insert, update and delete
// of those tables by any connection (another `sluice serve` process, the CLI, an older code path), foreign-key
// cascades included. A connection keeps what it read beside the counter it saw and drops it when the counter moved
// (storage/sqlite/read-cache.ts): one primary-key read instead of the look-up, and never stale across processes.
// Groups: 'inbound' (served domains, aliases, subscriptions, downstreams), 'lists' (list entries), 'dkim' (keys),
// 'accounts' (accounts and API keys: the principal of each API request).
const GROUPS: Record<string, readonly string[]> = {
  inbound: ['inbound_domains', 'inbound_aliases', 'inbound_subscriptions', 'inbound_downstreams'],
  lists: ['inbound_list_entries'],
  dkim: ['dkim_keys'],
  accounts: ['accounts', 'api_keys'],
};

const triggers = Object.entries(GROUPS)
  .flatMap(([group, tables]) =>
    tables.flatMap((table) =>
      (['INSERT', 'UPDATE', 'DELETE'] as const).map(
        (op) => `
  CREATE TRIGGER ${table}_generation_${op.toLowerCase()} AFTER ${op} ON ${table}
  BEGIN UPDATE cache_generations SET generation = generation + 1 WHERE name = '${group}'; END;`,
      ),
    ),
  )
  .join('');

export const READ_CACHE = `
  CREATE INDEX dkim_keys_signing ON dkim_keys(account_id, domain, status, created_at);
  CREATE INDEX dkim_keys_grace ON dkim_keys(account_id, domain, status, status_modified_at);
  CREATE INDEX suppressions_recipient ON suppressions(recipient, created_at, account_id);

  CREATE TABLE cache_generations (
    name TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  INSERT INTO cache_generations (name, generation) VALUES ${Object.keys(GROUPS).map((g) => `('${g}', 0)`).join(', ')};
${triggers}
  `;
