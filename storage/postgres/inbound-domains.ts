// Owns the inbound_domains table on PostgreSQL and the InboundDomains port over it (parts and subscriptions in their
// own files): provisioning, settings, key binding, aliases and downstreams, shared by every node.
import {
  maxDomains, mergedDomainSettings, MAX_ALIASES_PER_DOMAIN, newDomainSettings, type DomainSections, type InboundDomainRow,
  type InboundDomainStore, type ProvisionResult, type SectionsResult, type ServedDomainRow,
} from '../ports/inbound-domains.js';
import type { Pg, Query } from './database.js';
import { uncached, type ReadCache } from './read-cache.js';
import { findAlias, listDownstreams, overlapping, readParts, replaceDownstreams, takenAlias, writeParts } from './inbound-domain-parts.js';
import { createSubscription, findSubscription, listSubscriptions, subscriptionHandle } from './inbound-subscriptions.js';

/**
 * Every write that checks names before writing them (provision, settings, aliases, downstreams, delete) holds this
 * one lock: "an alias is never also a domain", the overlap rule between customers and max_domains span two tables
 * and several accounts, which no unique index says. Provisioning is an operator's or API client's occasional act,
 * so serialising it cluster-wide costs nothing the MX notices (the MX only reads).
 */
const NAMES_LOCK = 0x696e626e616d; // "inbnam" in ASCII: an advisory-lock key of its own

async function byName(q: Query, name: string): Promise<InboundDomainRow | undefined> {
  return (await q<InboundDomainRow>('SELECT * FROM inbound_domains WHERE domain = $1', [name]))[0];
}

async function byId(q: Query, id: number): Promise<InboundDomainRow | undefined> {
  return (await q<InboundDomainRow>('SELECT * FROM inbound_domains WHERE id = $1', [id]))[0];
}

async function countOnSubscription(q: Query, accountId: number, subscriptionId: number): Promise<number> {
  const [row] = await q<{ n: number }>('SELECT count(*) AS n FROM inbound_domains WHERE account_id = $1 AND subscription_id = $2', [accountId, subscriptionId]);
  return row!.n;
}

/** Writes the given sections over a domain (inside the caller's transaction; aliases already checked). */
async function applySections(q: Query, row: InboundDomainRow, sections: DomainSections, now: number): Promise<void> {
  const st = mergedDomainSettings(row, sections.settings);
  await q(
    `UPDATE inbound_domains SET abuse_policy = $2, abuse_policy_override = $3, spam_header_name = $4, spam_header_value = $5,
       digest_interval = $7, digest_admins = $8, updated_at = $6 WHERE id = $1`,
    [row.id, st.abusePolicy, st.abusePolicyOverride, st.spamHeaderName, st.spamHeaderValue, now, st.digestInterval, st.digestAdmins],
  );
  await writeParts(q, row.id, sections, now);
}

/** The PostgreSQL InboundDomains port. Names passed in must already be normalised (filters/inbound-names.ts). */
export function createPgInboundDomainStore(pg: Pg, reads: ReadCache = uncached): InboundDomainStore {
  /** Runs `fn` as one unit holding the names lock. */
  const named = <T>(fn: (q: Query) => Promise<T>) =>
    pg.tx(async (q) => {
      await q('SELECT pg_advisory_xact_lock($1)', [NAMES_LOCK]);
      return fn(q);
    });

  return {
    // Asked at RCPT, at DATA and at delivery of every relayed message: from the read cache while none of its tables
    // changed on any node.
    async findServedDomain(name) {
      const domain = name.toLowerCase().replace(/\.$/, '');
      const row = await reads.get(['inbound_domains', 'inbound_subscriptions', 'inbound_aliases'], domain, async () => {
        const [found] = await pg.query<ServedDomainRow>(
          `SELECT d.*, sub.handle AS subscription_handle, NULL::text AS via_alias
             FROM inbound_domains d JOIN inbound_subscriptions sub ON sub.id = d.subscription_id WHERE d.domain = $1
           UNION ALL
           SELECT d.*, sub.handle AS subscription_handle, a.alias AS via_alias
             FROM inbound_aliases a JOIN inbound_domains d ON d.id = a.domain_id
             JOIN inbound_subscriptions sub ON sub.id = d.subscription_id WHERE a.alias = $1
           LIMIT 1`,
          [domain],
        );
        return found;
      });
      return row && { ...row };
    },
    findDomain: (name) => byName(pg.query, name),
    findDomainById: (id) => byId(pg.query, id),
    findAlias: (alias) => findAlias(pg.query, alias),

    async listDomains(input) {
      const where = `account_id = $1 AND (api_key_id IS NULL OR api_key_id = $2) AND ($3::text[] IS NULL OR domain = ANY ($3))`;
      const params = [input.accountId, input.keyId, input.names];
      const [rows, count] = await Promise.all([
        pg.query<InboundDomainRow>(`SELECT * FROM inbound_domains WHERE ${where} ORDER BY domain COLLATE "C" LIMIT $4 OFFSET $5`, [...params, input.limit, input.offset]),
        pg.query<{ n: number }>(`SELECT count(*) AS n FROM inbound_domains WHERE ${where}`, params),
      ]);
      return { rows, total: count[0]!.n };
    },

    async details(row) {
      const [handle, parts] = await Promise.all([subscriptionHandle(pg.query, row.subscription_id), readParts(pg.query, row.id)]);
      return { row, subscriptionHandle: handle, ...parts };
    },

    provision: (input) =>
      named(async (q): Promise<ProvisionResult> => {
        const aliases = input.sections.aliases ?? [];
        const existing = await byName(q, input.domain);
        if (existing) {
          if (existing.account_id !== input.accountId) return { ok: false, reason: 'other-account' };
          if (existing.api_key_id !== null && existing.api_key_id !== input.callerKeyId) return { ok: false, reason: 'bound-to-other-key' };
          if (!input.overwrite) return { ok: true, created: false, domainId: existing.id };
          const taken = await takenAlias(q, aliases, existing.id);
          if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
          const clash = await overlapping(q, aliases, input.accountId);
          if (clash) return { ok: false, reason: 'overlap', name: clash };
          await applySections(q, existing, input.sections, input.now);
          await q(
            'UPDATE inbound_domains SET subscription_id = $2, api_key_id = coalesce($3, api_key_id), updated_at = $4 WHERE id = $1',
            [existing.id, input.subscription.id, input.bindKeyId, input.now],
          );
          return { ok: true, created: false, domainId: existing.id };
        }
        if (await findAlias(q, input.domain)) return { ok: false, reason: 'is-alias' };
        const limit = maxDomains(input.subscription);
        if (limit !== null && (await countOnSubscription(q, input.accountId, input.subscription.id)) >= limit) return { ok: false, reason: 'limit' };
        const taken = await takenAlias(q, aliases, null);
        if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
        const clash = await overlapping(q, [...(input.operator ? [] : [input.domain]), ...aliases], input.accountId);
        if (clash) return { ok: false, reason: 'overlap', name: clash };
        const st = newDomainSettings(input.sections.settings);
        const [row] = await q<InboundDomainRow>(
          `INSERT INTO inbound_domains (account_id, domain, subscription_id, api_key_id, abuse_policy, abuse_policy_override,
             spam_header_name, spam_header_value, digest_interval, digest_admins, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $11, $9, $9) RETURNING *`,
          [input.accountId, input.domain, input.subscription.id, input.bindKeyId, st.abusePolicy, st.abusePolicyOverride,
            st.spamHeaderName, st.spamHeaderValue, input.now, st.digestInterval, st.digestAdmins],
        );
        await writeParts(q, row!.id, input.sections, input.now);
        return { ok: true, created: true, domainId: row!.id };
      }),

    async remainingOnSubscription(accountId, subscription) {
      const limit = maxDomains(subscription);
      if (limit === null) return Infinity;
      return Math.max(0, limit - (await countOnSubscription(pg.query, accountId, subscription.id)));
    },

    updateSections: (domainId, sections, now) =>
      named(async (q): Promise<SectionsResult> => {
        const row = await byId(q, domainId);
        if (!row) throw new Error(`no inbound domain ${domainId}`);
        const taken = await takenAlias(q, sections.aliases ?? [], domainId);
        if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
        const clash = await overlapping(q, sections.aliases ?? [], row.account_id);
        if (clash) return { ok: false, reason: 'overlap', name: clash };
        await applySections(q, row, sections, now);
        return { ok: true };
      }),

    async bindKey(domainId, keyId, now) {
      await pg.exec('UPDATE inbound_domains SET api_key_id = $2, updated_at = $3 WHERE id = $1', [domainId, keyId, now]);
    },

    // Admins, aliases, downstreams and domain/recipient list entries go by ON DELETE CASCADE; quarantined mail keeps
    // its rows (domain_id set null).
    deleteDomain: async (domainId) => (await pg.exec('DELETE FROM inbound_domains WHERE id = $1', [domainId])) > 0,

    addAlias: (domainId, alias, now) =>
      named(async (q) => {
        const row = await byId(q, domainId);
        if (!row) throw new Error(`no inbound domain ${domainId}`);
        if ((await byName(q, alias)) || (await findAlias(q, alias))) return 'taken' as const;
        if (await overlapping(q, [alias], row.account_id)) return 'overlap' as const;
        const [{ n }] = (await q<{ n: number }>('SELECT count(*) AS n FROM inbound_aliases WHERE domain_id = $1', [domainId])) as [{ n: number }];
        if (n >= MAX_ALIASES_PER_DOMAIN) return 'full' as const;
        await q('INSERT INTO inbound_aliases (alias, domain_id, created_at) VALUES ($1, $2, $3)', [alias, domainId, now]);
        await q('UPDATE inbound_domains SET updated_at = $2 WHERE id = $1', [domainId, now]);
        return 'ok' as const;
      }),

    removeAlias: async (domainId, alias) => (await pg.exec('DELETE FROM inbound_aliases WHERE alias = $1 AND domain_id = $2', [alias, domainId])) > 0,
    // Read for every relayed message's delivery: cached as the served domain is.
    listDownstreams: async (domainId, limit, offset) =>
      (await reads.get(['inbound_downstreams'], `${domainId} ${limit} ${offset}`, () => listDownstreams(pg.query, domainId, limit, offset))).map((d) => ({ ...d })),

    setDownstreams: (domainId, records, now) =>
      named(async (q) => {
        await replaceDownstreams(q, domainId, records);
        await q('UPDATE inbound_domains SET updated_at = $2 WHERE id = $1', [domainId, now]);
      }),

    listSubscriptions: (accountId) => listSubscriptions(pg.query, accountId),
    findSubscription: (accountId, handle) => findSubscription(pg.query, accountId, handle),
    createSubscription: (input) => createSubscription(pg.query, input),
  };
}
