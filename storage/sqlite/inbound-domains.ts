// Owns the inbound_domains table (domains, their settings and key binding) and the one store over inbound provisioning.
import {
  maxDomains, mergedDomainSettings, newDomainSettings, type DomainDetails, type DomainSections, type InboundDomainRow,
  type InboundSubscriptionRow, type ProvisionInput, type ProvisionResult, type SectionsResult, type ServedDomainRow,
} from '../ports/inbound-domains.js';
import type { Db } from './database.js';
import { createDomainPartsStore } from './inbound-domain-parts.js';
import { createInboundSubscriptionStore } from './inbound-subscriptions.js';

/** A stored 0/1 flag as the port's boolean (null stays null: never set). */
const flag = (v: unknown): boolean | null => (v === null || v === undefined ? null : v === 1);
/** The port's flag as the stored 0/1. */
const bit = (v: boolean | null): number | null => (v === null ? null : v ? 1 : 0);

/** A domain row as the port gives it: abuse_policy_override and digest_admins booleans (SQLite keeps 0/1). */
function domainRow<R extends InboundDomainRow>(raw: unknown): R | undefined {
  if (raw === undefined) return undefined;
  const r = raw as R;
  return { ...r, abuse_policy_override: flag(r.abuse_policy_override), digest_admins: flag(r.digest_admins) === true };
}

/**
 * Repository over inbound domains. Names passed in must already be normalised (lower-case A-label without a
 * trailing dot; see filters/inbound-names.ts). Methods taking an account id never return another account's rows.
 */
export function createInboundDomainStore(db: Db) {
  const s = {
    byName: db.prepare('SELECT * FROM inbound_domains WHERE domain = ?'),
    byId: db.prepare('SELECT * FROM inbound_domains WHERE id = ?'),
    served: db.prepare(
      `SELECT d.*, sub.handle AS subscription_handle, NULL AS via_alias
         FROM inbound_domains d JOIN inbound_subscriptions sub ON sub.id = d.subscription_id WHERE d.domain = @name
       UNION ALL
       SELECT d.*, sub.handle AS subscription_handle, a.alias AS via_alias
         FROM inbound_aliases a JOIN inbound_domains d ON d.id = a.domain_id
         JOIN inbound_subscriptions sub ON sub.id = d.subscription_id WHERE a.alias = @name
       LIMIT 1`,
    ),
    listPage: db.prepare(
      `SELECT * FROM inbound_domains
       WHERE account_id = @account AND (api_key_id IS NULL OR api_key_id = @key)
         AND (@names IS NULL OR domain IN (SELECT value FROM json_each(@names)))
       ORDER BY domain LIMIT @limit OFFSET @offset`,
    ),
    listCount: db.prepare(
      `SELECT count(*) AS n FROM inbound_domains
       WHERE account_id = @account AND (api_key_id IS NULL OR api_key_id = @key)
         AND (@names IS NULL OR domain IN (SELECT value FROM json_each(@names)))`,
    ),
    insert: db.prepare(
      `INSERT INTO inbound_domains (account_id, domain, subscription_id, api_key_id, abuse_policy,
         abuse_policy_override, spam_header_name, spam_header_value, digest_interval, digest_admins, created_at, updated_at)
       VALUES (@account, @domain, @subscription, @key, @policy, @override, @header_name, @header_value, @digest_interval,
         @digest_admins, @now, @now)
       RETURNING id`,
    ),
    updateSettings: db.prepare(
      `UPDATE inbound_domains SET abuse_policy = @policy, abuse_policy_override = @override,
         spam_header_name = @header_name, spam_header_value = @header_value, digest_interval = @digest_interval,
         digest_admins = @digest_admins, updated_at = @now WHERE id = @id`,
    ),
    setSubscription: db.prepare('UPDATE inbound_domains SET subscription_id = ?, updated_at = ? WHERE id = ?'),
    setKey: db.prepare('UPDATE inbound_domains SET api_key_id = ?, updated_at = ? WHERE id = ?'),
    touch: db.prepare('UPDATE inbound_domains SET updated_at = ? WHERE id = ?'),
    delete: db.prepare('DELETE FROM inbound_domains WHERE id = ?'),
    countOnSubscription: db.prepare(
      'SELECT count(*) AS n FROM inbound_domains WHERE account_id = ? AND subscription_id = ?',
    ),
    // A name served (as a domain or an alias) for a customer outside @account's family (a parent and its
    // sub-accounts are one customer) that is @name, a parent of it or a subdomain of it. Domain names hold no
    // LIKE/GLOB wildcards we could trust, so the suffix test compares with substr.
    overlap: db.prepare(
      `SELECT 1 FROM (
         SELECT d.domain AS name, d.account_id FROM inbound_domains d
         UNION ALL
         SELECT a.alias, d.account_id FROM inbound_aliases a JOIN inbound_domains d ON d.id = a.domain_id
       ) n JOIN accounts o ON o.id = n.account_id
       WHERE coalesce(o.parent_id, o.id) != (SELECT coalesce(parent_id, id) FROM accounts WHERE id = @account)
         AND (n.name = @name OR substr(@name, -length(n.name) - 1) = '.' || n.name
              OR substr(n.name, -length(@name) - 1) = '.' || @name)
       LIMIT 1`,
    ),
  };
  /**
   * The first of `names` that would take mail meant for another customer: the same name, a parent or a subdomain
   * of a domain or alias another customer serves (issue 22: provisioning sub.b.test, or b.test, while another
   * customer serves b.test, would divert its mail). Only the operator provisions such a name.
   */
  const overlapping = (names: readonly string[], accountId: number): string | undefined =>
    names.find((name) => s.overlap.get({ name, account: accountId }) !== undefined);
  const parts = createDomainPartsStore(db, {
    isDomain: (name) => s.byName.get(name) !== undefined,
    touch: (domainId, now) => s.touch.run(now, domainId),
  });
  const subscriptions = createInboundSubscriptionStore(db);

  /** Writes the given sections over a domain (inside the caller's transaction; aliases already checked). */
  function applySections(row: InboundDomainRow, sections: DomainSections, now: number): void {
    const st = mergedDomainSettings(row, sections.settings);
    s.updateSettings.run({
      id: row.id,
      policy: st.abusePolicy,
      override: bit(st.abusePolicyOverride),
      header_name: st.spamHeaderName,
      header_value: st.spamHeaderValue,
      digest_interval: st.digestInterval,
      digest_admins: bit(st.digestAdmins),
      now,
    });
    parts.write(row.id, sections, now);
  }

  return {
    /**
     * The domain mail for `name` (a lower-case A-label, no trailing dot) is accepted for: the provisioned domain of
     * that name, or the domain that has it as an alias (then `via_alias` is set). Undefined when neither: relay
     * denied. Settings columns may be null for fields never set; fall back to DEFAULT_DOMAIN_SETTINGS.
     */
    findServedDomain(name: string): ServedDomainRow | undefined {
      return domainRow<ServedDomainRow>(s.served.get({ name: name.toLowerCase().replace(/\.$/, '') }));
    },

    /** The provisioned domain of exactly this name (aliases not followed), any account. */
    findDomain(name: string): InboundDomainRow | undefined {
      return domainRow(s.byName.get(name));
    },

    findDomainById(id: number): InboundDomainRow | undefined {
      return domainRow(s.byId.get(id));
    },

    findAlias: parts.findAlias,

    /**
     * One page of the account's domains that `keyId` may see (unbound ones and those bound to it), ordered by
     * name, optionally restricted to `names`; `total` counts every match, not just the page.
     */
    listDomains(input: { accountId: number; keyId: number; names: string[] | null; limit: number; offset: number }): {
      rows: InboundDomainRow[];
      total: number;
    } {
      const params = {
        account: input.accountId,
        key: input.keyId,
        names: input.names ? JSON.stringify(input.names) : null,
      };
      const rows = s.listPage.all({ ...params, limit: input.limit, offset: input.offset }).map((r) => domainRow(r) as InboundDomainRow);
      const { n } = s.listCount.get(params) as { n: number };
      return { rows, total: n };
    },

    /** Admins, downstreams and aliases of a domain, for rendering. */
    details(row: InboundDomainRow): DomainDetails {
      return { row, subscriptionHandle: subscriptions.subscriptionOf(row.subscription_id).handle, ...parts.read(row.id) };
    },

    /**
     * Provisions `domain` for an account in one transaction.
     * - held by another account → 'other-account'; already an alias of any domain → 'is-alias';
     * - held by this account: bound to another key than `callerKeyId` → 'bound-to-other-key'; otherwise
     *   `created: false`, and only with `overwrite` are the given sections (and subscription, and the binding when
     *   `bindKeyId` is set) written;
     * - new: 'limit' when the subscription's max_domains is reached; else created with DEFAULT_DOMAIN_SETTINGS
     *   under the given settings, bound to `bindKeyId` (null: unbound).
     * An alias that is a domain or another domain's alias → 'alias-taken', nothing written.
     * A new domain or an alias that overlaps another customer's name (`overlapping`) → 'overlap', nothing written,
     * unless `operator` (`sluice inbound-domains provision`) provisions the domain itself.
     */
    provision(input: ProvisionInput): ProvisionResult {
      return db.transaction((): ProvisionResult => {
        const existing = domainRow(s.byName.get(input.domain));
        if (existing) {
          if (existing.account_id !== input.accountId) return { ok: false, reason: 'other-account' };
          if (existing.api_key_id !== null && existing.api_key_id !== input.callerKeyId) {
            return { ok: false, reason: 'bound-to-other-key' };
          }
          if (!input.overwrite) return { ok: true, created: false, domainId: existing.id };
          const taken = parts.takenAlias(input.sections.aliases ?? [], existing.id);
          if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
          const clash = overlapping(input.sections.aliases ?? [], input.accountId);
          if (clash) return { ok: false, reason: 'overlap', name: clash };
          applySections(existing, input.sections, input.now);
          s.setSubscription.run(input.subscription.id, input.now, existing.id);
          if (input.bindKeyId !== null) s.setKey.run(input.bindKeyId, input.now, existing.id);
          return { ok: true, created: false, domainId: existing.id };
        }
        if (parts.isAlias(input.domain)) return { ok: false, reason: 'is-alias' };
        const limit = maxDomains(input.subscription);
        if (limit !== null) {
          const { n } = s.countOnSubscription.get(input.accountId, input.subscription.id) as { n: number };
          if (n >= limit) return { ok: false, reason: 'limit' };
        }
        const taken = parts.takenAlias(input.sections.aliases ?? [], null);
        if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
        const clash = overlapping([...(input.operator ? [] : [input.domain]), ...(input.sections.aliases ?? [])], input.accountId);
        if (clash) return { ok: false, reason: 'overlap', name: clash };
        const st = newDomainSettings(input.sections.settings);
        const { id } = s.insert.get({
          account: input.accountId,
          domain: input.domain,
          subscription: input.subscription.id,
          key: input.bindKeyId,
          policy: st.abusePolicy,
          override: st.abusePolicyOverride ? 1 : 0,
          header_name: st.spamHeaderName,
          header_value: st.spamHeaderValue,
          digest_interval: st.digestInterval,
          digest_admins: bit(st.digestAdmins),
          now: input.now,
        }) as { id: number };
        const row = domainRow(s.byId.get(id)) as InboundDomainRow;
        applySections(row, { ...input.sections, settings: undefined }, input.now);
        return { ok: true, created: true, domainId: id };
      }).immediate();
    },

    /** Free domains an account could still provision against a subscription (Infinity without a limit). */
    remainingOnSubscription(accountId: number, subscription: InboundSubscriptionRow): number {
      const limit = maxDomains(subscription);
      if (limit === null) return Infinity;
      const { n } = s.countOnSubscription.get(accountId, subscription.id) as { n: number };
      return Math.max(0, limit - n);
    },

    /** PUT settings: writes the given sections in one transaction; 'alias-taken' writes nothing. */
    updateSections(domainId: number, sections: DomainSections, now: number): SectionsResult {
      return db.transaction((): SectionsResult => {
        const row = domainRow(s.byId.get(domainId)) as InboundDomainRow;
        const taken = parts.takenAlias(sections.aliases ?? [], domainId);
        if (taken) return { ok: false, reason: 'alias-taken', alias: taken };
        const clash = overlapping(sections.aliases ?? [], row.account_id);
        if (clash) return { ok: false, reason: 'overlap', name: clash };
        applySections(row, sections, now);
        return { ok: true };
      }).immediate();
    },

    /** Binds the domain to one API key (null: any inbound key of the owner). */
    bindKey(domainId: number, keyId: number | null, now: number): void {
      s.setKey.run(keyId, now, domainId);
    },

    /** Removes a domain with its admins, aliases, downstreams and domain/recipient list entries (cascade). */
    deleteDomain(domainId: number): boolean {
      return s.delete.run(domainId).changes > 0;
    },

    /**
     * Adds an alias: 'taken' when the name is a domain or already an alias, 'overlap' when it overlaps another
     * customer's name (`overlapping`), 'full' past MAX_ALIASES_PER_DOMAIN; nothing written then.
     */
    addAlias(domainId: number, alias: string, now: number): 'ok' | 'taken' | 'overlap' | 'full' {
      return db.transaction(() => {
        const row = s.byId.get(domainId) as InboundDomainRow;
        if (!parts.takenAlias([alias], null) && overlapping([alias], row.account_id)) return 'overlap' as const;
        return parts.addAlias(domainId, alias, now);
      }).immediate();
    },
    removeAlias: parts.removeAlias,
    listDownstreams: parts.listDownstreams,
    setDownstreams: parts.setDownstreams,
    listSubscriptions: subscriptions.listSubscriptions,
    findSubscription: subscriptions.findSubscription,
    createSubscription: subscriptions.createSubscription,
  };
}

export type InboundDomainStore = ReturnType<typeof createInboundDomainStore>;
