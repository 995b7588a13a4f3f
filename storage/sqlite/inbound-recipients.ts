// Owns the inbound_recipients table: recipients created with PUT /inbound/v1/users, their filter flag judged against
// the subscription's protected-address limit, and their list entries and admin role created and removed with them.
import type { ListEntryRow, ListScope } from '../ports/inbound-lists.js';
import {
  decideFilter, maxProtectedAddresses, MAX_RECIPIENTS_PER_ACCOUNT, type CreateRecipientResult, type NewRecipient,
  type RecipientRow,
} from '../ports/inbound-recipients.js';
import type { Db } from './database.js';
import type { createInboundListStore } from './inbound-lists.js';

/** The columns of the port's row: the domain's name, and the admin role read from the domain's admins. */
const ROW = `r.id, r.account_id, r.domain_id, d.domain, r.address, r.filter, r.created_at,
  EXISTS (SELECT 1 FROM inbound_domain_admins a WHERE a.domain_id = r.domain_id AND a.email = r.address) AS admin`;

/** A listing's domain filter, and the key binding (associate-key): a key sees no recipient of another key's domain. */
const VISIBLE = '(@domain IS NULL OR r.domain_id = @domain) AND (@key IS NULL OR d.api_key_id IS NULL OR d.api_key_id = @key)';

function recipientRow(raw: unknown): RecipientRow | undefined {
  if (raw === undefined) return undefined;
  const r = raw as Omit<RecipientRow, 'admin' | 'filter'> & { admin: number; filter: number };
  return { ...r, admin: r.admin === 1, filter: r.filter === 1 };
}

/** Repository over recipients; `lists` writes their list entries in the same transaction. */
export function createInboundRecipientStore(db: Db, lists: ReturnType<typeof createInboundListStore>) {
  const s = {
    byAddress: db.prepare(`SELECT ${ROW} FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id WHERE r.account_id = ? AND r.address = ?`),
    // Filtered recipients of the account on every domain it provisioned against the subscription of `domain`.
    protectedOn: db.prepare(
      `SELECT s.limits, (SELECT count(*) FROM inbound_recipients r JOIN inbound_domains rd ON rd.id = r.domain_id
                          WHERE r.account_id = @account AND r.filter = 1 AND rd.subscription_id = d.subscription_id) AS used
       FROM inbound_domains d JOIN inbound_subscriptions s ON s.id = d.subscription_id WHERE d.id = @domain`,
    ),
    countAccount: db.prepare('SELECT count(*) FROM inbound_recipients WHERE account_id = ?').pluck(),
    countEntries: db.prepare('SELECT count(*) FROM inbound_list_entries WHERE account_id = ?').pluck(),
    hasEntry: db.prepare("SELECT 1 FROM inbound_list_entries WHERE account_id = ? AND level = 'recipient' AND scope = ? AND item = ?").pluck(),
    insert: db.prepare(
      'INSERT INTO inbound_recipients (account_id, domain_id, address, filter, created_at) VALUES (@account, @domain, @address, @filter, @now)',
    ),
    addAdmin: db.prepare('INSERT OR IGNORE INTO inbound_domain_admins (domain_id, email) VALUES (?, ?)'),
    page: db.prepare(
      `SELECT ${ROW} FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id
       WHERE r.account_id = @account AND ${VISIBLE} ORDER BY r.address LIMIT @limit OFFSET @offset`,
    ),
    count: db.prepare(`SELECT count(*) FROM inbound_recipients r JOIN inbound_domains d ON d.id = r.domain_id WHERE r.account_id = @account AND ${VISIBLE}`).pluck(),
    remove: db.prepare('DELETE FROM inbound_recipients WHERE account_id = ? AND address = ? RETURNING domain_id').pluck(),
    removeAdmin: db.prepare('DELETE FROM inbound_domain_admins WHERE domain_id = ? AND email = ?'),
    removeEntries: db.prepare("DELETE FROM inbound_list_entries WHERE account_id = ? AND level = 'recipient' AND scope = ?"),
    unfiltered: db.prepare(
      'SELECT address FROM inbound_recipients WHERE account_id = ? AND filter = 0 AND address IN (SELECT value FROM json_each(?))',
    ).pluck(),
  };
  const find = (accountId: number, address: string) => recipientRow(s.byAddress.get(accountId, address));

  return {
    /** See InboundRecipientStore.createRecipient: one transaction, nothing written unless created. */
    createRecipient(input: NewRecipient): CreateRecipientResult {
      return db.transaction((): CreateRecipientResult => {
        const existing = find(input.accountId, input.address);
        if (existing) return { ok: true, created: false, recipient: existing };
        if ((s.countAccount.get(input.accountId) as number) >= (input.maxRecipients ?? MAX_RECIPIENTS_PER_ACCOUNT)) {
          return { ok: false, reason: 'recipients-full' };
        }
        const room = s.protectedOn.get({ account: input.accountId, domain: input.domainId }) as { limits: string; used: number };
        const filter = decideFilter(input.filter, room.used, maxProtectedAddresses(JSON.parse(room.limits)));
        if (filter === 'protected-limit') return { ok: false, reason: filter };
        // Entries the address already has (added through /users/{email}/lists before it was created) are not new.
        const fresh = new Set(input.entries.filter((e) => s.hasEntry.get(input.accountId, input.address, e.item) === undefined).map((e) => e.item));
        if ((s.countEntries.get(input.accountId) as number) + fresh.size > input.maxEntries) return { ok: false, reason: 'lists-full' };
        s.insert.run({ account: input.accountId, domain: input.domainId, address: input.address, filter: filter ? 1 : 0, now: input.now });
        if (input.admin) s.addAdmin.run(input.domainId, input.address);
        const scope: ListScope = { level: 'recipient', accountId: input.accountId, domainId: input.domainId, recipient: input.address };
        const entries = input.entries.map((e) => lists.addEntry(scope, e, input.now, Infinity) as ListEntryRow);
        return { ok: true, created: true, recipient: find(input.accountId, input.address)!, entries };
      })();
    },

    findRecipient: find,

    listRecipients(input: { accountId: number; keyId: number | null; domainId: number | null; limit: number; offset: number }): { rows: RecipientRow[]; total: number } {
      const params = { account: input.accountId, key: input.keyId, domain: input.domainId };
      const rows = s.page.all({ ...params, limit: input.limit, offset: input.offset }).map((r) => recipientRow(r)!);
      return { rows, total: s.count.get(params) as number };
    },

    removeRecipient(accountId: number, address: string): boolean {
      return db.transaction(() => {
        const domainId = s.remove.get(accountId, address) as number | undefined;
        if (domainId === undefined) return false;
        s.removeAdmin.run(domainId, address);
        s.removeEntries.run(accountId, address);
        return true;
      })();
    },

    unfiltered(accountId: number, addresses: readonly string[]): string[] {
      return addresses.length === 0 ? [] : (s.unfiltered.all(accountId, JSON.stringify(addresses)) as string[]);
    },
  };
}
