// Owns the inbound_recipients table on PostgreSQL (the InboundRecipients port): recipients created with
// PUT /inbound/v1/users, their filter flag judged against the subscription's protected-address limit, and their list
// entries and admin role created and removed with them.
import type { ListScope } from '../ports/inbound-lists.js';
import {
  decideFilter, maxProtectedAddresses, MAX_RECIPIENTS_PER_ACCOUNT, type InboundRecipientStore, type RecipientRow,
} from '../ports/inbound-recipients.js';
import { lockAccounts } from './account-lock.js';
import type { Pg, Query } from './database.js';
import { putEntry } from './inbound-lists.js';

/** The columns of the port's row: the domain's name, and the admin role read from the domain's admins. */
const ROW = `r.id, r.account_id, r.domain_id, d.domain, r.address, r.filter, r.created_at,
  EXISTS (SELECT 1 FROM inbound_domain_admins a WHERE a.domain_id = r.domain_id AND a.email = r.address) AS admin`;

async function find(q: Query, accountId: number, address: string): Promise<RecipientRow | undefined> {
  const [row] = await q<RecipientRow>(
    `SELECT ${ROW} FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id WHERE r.account_id = $1 AND r.address = $2`,
    [accountId, address],
  );
  return row;
}

/** The PostgreSQL InboundRecipients port. Every query is scoped by account. */
export function createPgInboundRecipientStore(pg: Pg): InboundRecipientStore {
  return {
    // Every bound it checks (recipients, list entries, protected addresses) counts the account's rows: the account's
    // row lock, taken first, makes two nodes creating at once run one after the other (as the lists' addEntry).
    createRecipient: (input) =>
      pg.tx(async (q) => {
        await lockAccounts(q, [input.accountId]);
        const existing = await find(q, input.accountId, input.address);
        if (existing) return { ok: true, created: false, recipient: existing };
        const [room] = await q<{ limits: unknown; used: number; recipients: number; entries: number; held: string[] }>(
          `SELECT s.limits,
             (SELECT count(*) FROM inbound_recipients r JOIN inbound_domains rd ON rd.id = r.domain_id
               WHERE r.account_id = $1 AND r.filter AND rd.subscription_id = d.subscription_id) AS used,
             (SELECT count(*) FROM inbound_recipients WHERE account_id = $1) AS recipients,
             (SELECT count(*) FROM inbound_list_entries WHERE account_id = $1) AS entries,
             ARRAY(SELECT item FROM inbound_list_entries WHERE account_id = $1 AND level = 'recipient' AND scope = $3) AS held
           FROM inbound_domains d JOIN inbound_subscriptions s ON s.id = d.subscription_id WHERE d.id = $2`,
          [input.accountId, input.domainId, input.address],
        );
        if (room!.recipients >= (input.maxRecipients ?? MAX_RECIPIENTS_PER_ACCOUNT)) return { ok: false, reason: 'recipients-full' };
        const filter = decideFilter(input.filter, room!.used, maxProtectedAddresses(room!.limits));
        if (filter === 'protected-limit') return { ok: false, reason: filter };
        // Entries the address already has (added through /users/{email}/lists before it was created) are not new.
        const fresh = new Set(input.entries.map((e) => e.item).filter((item) => !room!.held.includes(item)));
        if (room!.entries + fresh.size > input.maxEntries) return { ok: false, reason: 'lists-full' };
        await q('INSERT INTO inbound_recipients (account_id, domain_id, address, filter, created_at) VALUES ($1, $2, $3, $4, $5)', [
          input.accountId, input.domainId, input.address, filter, input.now,
        ]);
        if (input.admin) await q('INSERT INTO inbound_domain_admins (domain_id, email) VALUES ($1, $2) ON CONFLICT DO NOTHING', [input.domainId, input.address]);
        const scope: ListScope = { level: 'recipient', accountId: input.accountId, domainId: input.domainId, recipient: input.address };
        const entries = [];
        for (const e of input.entries) entries.push(await putEntry(q, scope, e, input.now));
        return { ok: true, created: true, recipient: (await find(q, input.accountId, input.address))!, entries };
      }),

    findRecipient: (accountId, address) => find(pg.query, accountId, address),

    async listRecipients(input) {
      // The domain filter, and the key binding (associate-key): a key sees no recipient of another key's domain.
      const where = `r.account_id = $1 AND ($2::bigint IS NULL OR r.domain_id = $2) AND ($3::bigint IS NULL OR d.api_key_id IS NULL OR d.api_key_id = $3)`;
      const params = [input.accountId, input.domainId, input.keyId];
      const [rows, count] = await Promise.all([
        pg.query<RecipientRow>(
          `SELECT ${ROW} FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id WHERE ${where}
           ORDER BY r.address COLLATE "C" LIMIT $4 OFFSET $5`,
          [...params, input.limit, input.offset],
        ),
        pg.query<{ n: number }>(`SELECT count(*) AS n FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id WHERE ${where}`, params),
      ]);
      return { rows, total: count[0]!.n };
    },

    removeRecipient: (accountId, address) =>
      pg.tx(async (q) => {
        const [gone] = await q<{ domain_id: number }>('DELETE FROM inbound_recipients WHERE account_id = $1 AND address = $2 RETURNING domain_id', [accountId, address]);
        if (!gone) return false;
        await q('DELETE FROM inbound_domain_admins WHERE domain_id = $1 AND email = $2', [gone.domain_id, address]);
        await q("DELETE FROM inbound_list_entries WHERE account_id = $1 AND level = 'recipient' AND scope = $2", [accountId, address]);
        return true;
      }),

    async unfiltered(accountId, addresses) {
      if (addresses.length === 0) return [];
      const rows = await pg.query<{ address: string }>(
        'SELECT address FROM inbound_recipients WHERE account_id = $1 AND NOT filter AND address = ANY ($2::text[])',
        [accountId, addresses],
      );
      return rows.map((r) => r.address);
    },
  };
}
