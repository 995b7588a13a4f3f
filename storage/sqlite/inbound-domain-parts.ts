// Owns a domain's parts: its admins, aliases and downstream addresses (inbound_domain_admins, _aliases, _downstreams).
import { MAX_ALIASES_PER_DOMAIN, type DomainParts, type DownstreamAddress } from '../ports/inbound-domains.js';
import type { Db } from './database.js';

/** What the parts need from the domain table: whether a name is a provisioned domain, and touching updated_at. */
export interface DomainLookups {
  isDomain: (name: string) => boolean;
  touch: (domainId: number, now: number) => void;
}

/**
 * Repository over a domain's parts; part of the inbound domain store (storage/inbound-domains.ts), which calls
 * `takenAlias` and `write` inside its own transactions.
 */
export function createDomainPartsStore(db: Db, domains: DomainLookups) {
  const s = {
    aliasRow: db.prepare(
      `SELECT a.alias, a.domain_id, d.domain, d.account_id FROM inbound_aliases a
       JOIN inbound_domains d ON d.id = a.domain_id WHERE a.alias = ?`,
    ),

    admins: db.prepare('SELECT email FROM inbound_domain_admins WHERE domain_id = ? ORDER BY email'),
    clearAdmins: db.prepare('DELETE FROM inbound_domain_admins WHERE domain_id = ?'),
    addAdmin: db.prepare('INSERT OR IGNORE INTO inbound_domain_admins (domain_id, email) VALUES (?, ?)'),

    aliases: db.prepare('SELECT alias FROM inbound_aliases WHERE domain_id = ? ORDER BY alias'),
    addAlias: db.prepare('INSERT INTO inbound_aliases (alias, domain_id, created_at) VALUES (?, ?, ?)'),
    countAliases: db.prepare('SELECT count(*) FROM inbound_aliases WHERE domain_id = ?').pluck(),
    removeAlias: db.prepare('DELETE FROM inbound_aliases WHERE alias = ? AND domain_id = ?'),
    clearAliases: db.prepare('DELETE FROM inbound_aliases WHERE domain_id = ?'),

    downstreams: db.prepare(
      `SELECT priority, weight, port, target FROM inbound_downstreams WHERE domain_id = ?
       ORDER BY position LIMIT ? OFFSET ?`,
    ),
    clearDownstreams: db.prepare('DELETE FROM inbound_downstreams WHERE domain_id = ?'),
    addDownstream: db.prepare(
      `INSERT INTO inbound_downstreams (domain_id, position, priority, weight, port, target)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
  };

  return {
    /** The first alias that is already a domain, or an alias of another domain than `domainId` (null: new domain). */
    takenAlias(aliases: readonly string[], domainId: number | null): string | undefined {
      for (const alias of aliases) {
        if (domains.isDomain(alias)) return alias;
        const row = s.aliasRow.get(alias) as { domain_id: number } | undefined;
        if (row && row.domain_id !== domainId) return alias;
      }
      return undefined;
    },

    /** True when `name` is an alias of any domain. */
    isAlias(name: string): boolean {
      return s.aliasRow.get(name) !== undefined;
    },

    /** Replaces the given lists of a domain (inside the caller's transaction; aliases already checked). */
    write(domainId: number, parts: DomainParts, now: number): void {
      if (parts.admins) {
        s.clearAdmins.run(domainId);
        for (const email of parts.admins) s.addAdmin.run(domainId, email);
      }
      if (parts.downstreams) {
        s.clearDownstreams.run(domainId);
        parts.downstreams.forEach((d, i) => s.addDownstream.run(domainId, i, d.priority, d.weight, d.port, d.target));
      }
      if (parts.aliases) {
        s.clearAliases.run(domainId);
        for (const alias of new Set(parts.aliases)) s.addAlias.run(alias, domainId, now);
      }
    },

    /** Admins, downstreams and aliases of a domain, for rendering. */
    read(domainId: number): Required<DomainParts> {
      return {
        admins: (s.admins.all(domainId) as { email: string }[]).map((r) => r.email),
        downstreams: s.downstreams.all(domainId, -1, 0) as DownstreamAddress[],
        aliases: (s.aliases.all(domainId) as { alias: string }[]).map((r) => r.alias),
      };
    },

    /** The alias row of this name with its domain and owner, any account. */
    findAlias(alias: string): { alias: string; domain_id: number; domain: string; account_id: number } | undefined {
      return s.aliasRow.get(alias) as
        | { alias: string; domain_id: number; domain: string; account_id: number }
        | undefined;
    },

    /**
     * Adds an alias; 'taken' when the name is a domain or already an alias (of this or another domain), 'full' when
     * the domain has MAX_ALIASES_PER_DOMAIN aliases already.
     */
    addAlias(domainId: number, alias: string, now: number): 'ok' | 'taken' | 'full' {
      return db.transaction(() => {
        if (domains.isDomain(alias) || s.aliasRow.get(alias)) return 'taken' as const;
        if ((s.countAliases.get(domainId) as number) >= MAX_ALIASES_PER_DOMAIN) return 'full' as const;
        s.addAlias.run(alias, domainId, now);
        domains.touch(domainId, now);
        return 'ok' as const;
      }).immediate();
    },

    /** Removes one alias of this domain; false when the domain has no such alias. */
    removeAlias(domainId: number, alias: string): boolean {
      return s.removeAlias.run(alias, domainId).changes > 0;
    },

    /** The domain's downstream addresses in the order they were set (the relay sorts by priority itself). */
    listDownstreams(domainId: number, limit = -1, offset = 0): DownstreamAddress[] {
      return s.downstreams.all(domainId, limit, offset) as DownstreamAddress[];
    },

    /** Replaces every downstream address of the domain (an empty list deletes them all). */
    setDownstreams(domainId: number, records: readonly DownstreamAddress[], now: number): void {
      db.transaction(() => {
        s.clearDownstreams.run(domainId);
        records.forEach((d, i) => s.addDownstream.run(domainId, i, d.priority, d.weight, d.port, d.target));
        domains.touch(domainId, now);
      }).immediate();
    },
  };
}
