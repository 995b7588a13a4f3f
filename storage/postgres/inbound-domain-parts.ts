// Owns a domain's parts on PostgreSQL: its admins, aliases and downstream addresses, and the name checks provisioning
// runs before writing them (taken aliases, names overlapping another customer's).
import type { DomainParts, DownstreamAddress } from '../ports/inbound-domains.js';
import type { Query } from './database.js';

/** An alias row with its domain and owner. */
export type AliasRow = { alias: string; domain_id: number; domain: string; account_id: number };

/** The alias row of this name, any account. */
export async function findAlias(q: Query, alias: string): Promise<AliasRow | undefined> {
  const [row] = await q<AliasRow>(
    `SELECT a.alias, a.domain_id, d.domain, d.account_id FROM inbound_aliases a
     JOIN inbound_domains d ON d.id = a.domain_id WHERE a.alias = $1`,
    [alias],
  );
  return row;
}

/** The first of `aliases` that is already a domain, or an alias of another domain than `domainId` (null: a new one). */
export async function takenAlias(q: Query, aliases: readonly string[], domainId: number | null): Promise<string | undefined> {
  if (aliases.length === 0) return undefined;
  const [row] = await q<{ name: string }>(
    `SELECT u.name FROM unnest($1::text[]) WITH ORDINALITY AS u(name, i)
     WHERE EXISTS (SELECT 1 FROM inbound_domains WHERE domain = u.name)
        OR EXISTS (SELECT 1 FROM inbound_aliases WHERE alias = u.name AND domain_id IS DISTINCT FROM $2::bigint)
     ORDER BY u.i LIMIT 1`,
    [aliases, domainId],
  );
  return row?.name;
}

/**
 * The first of `names` that would take mail meant for another customer: the same name, a parent or a subdomain of
 * a domain or alias served for an account outside `accountId`'s family (a parent and its sub-accounts are one
 * customer; issue 22). The suffix test compares with right(), as SQLite's with substr: names hold no wildcards to trust.
 */
export async function overlapping(q: Query, names: readonly string[], accountId: number): Promise<string | undefined> {
  if (names.length === 0) return undefined;
  const [row] = await q<{ name: string }>(
    `SELECT u.name FROM unnest($1::text[]) WITH ORDINALITY AS u(name, i)
     WHERE EXISTS (
       SELECT 1 FROM (
         SELECT d.domain AS name, d.account_id FROM inbound_domains d
         UNION ALL
         SELECT a.alias, d.account_id FROM inbound_aliases a JOIN inbound_domains d ON d.id = a.domain_id
       ) n JOIN accounts o ON o.id = n.account_id
       WHERE coalesce(o.parent_id, o.id) <> (SELECT coalesce(parent_id, id) FROM accounts WHERE id = $2)
         AND (n.name = u.name OR right(u.name, length(n.name) + 1) = '.' || n.name
              OR right(n.name, length(u.name) + 1) = '.' || u.name))
     ORDER BY u.i LIMIT 1`,
    [names, accountId],
  );
  return row?.name;
}

/** Replaces every downstream address of a domain (inside the caller's transaction). */
export async function replaceDownstreams(q: Query, domainId: number, records: readonly DownstreamAddress[]): Promise<void> {
  await q('DELETE FROM inbound_downstreams WHERE domain_id = $1', [domainId]);
  if (records.length === 0) return;
  await q(
    `INSERT INTO inbound_downstreams (domain_id, position, priority, weight, port, target)
     SELECT $1, u.i - 1, u.priority, u.weight, u.port, u.target
     FROM unnest($2::int[], $3::int[], $4::int[], $5::text[]) WITH ORDINALITY AS u(priority, weight, port, target, i)`,
    [domainId, records.map((d) => d.priority), records.map((d) => d.weight), records.map((d) => d.port), records.map((d) => d.target)],
  );
}

/** Replaces the given lists of a domain (inside the caller's transaction; aliases already checked). */
export async function writeParts(q: Query, domainId: number, parts: DomainParts, now: number): Promise<void> {
  if (parts.admins) {
    await q('DELETE FROM inbound_domain_admins WHERE domain_id = $1', [domainId]);
    await q(
      'INSERT INTO inbound_domain_admins (domain_id, email) SELECT $1, e FROM unnest($2::text[]) AS e ON CONFLICT DO NOTHING',
      [domainId, parts.admins],
    );
  }
  if (parts.downstreams) await replaceDownstreams(q, domainId, parts.downstreams);
  if (parts.aliases) {
    await q('DELETE FROM inbound_aliases WHERE domain_id = $1', [domainId]);
    await q(
      'INSERT INTO inbound_aliases (alias, domain_id, created_at) SELECT DISTINCT a, $2::bigint, $3::bigint FROM unnest($1::text[]) AS a',
      [parts.aliases, domainId, now],
    );
  }
}

/** A domain's downstream addresses in the order they were set; `limit` below 0 or absent: all. */
export async function listDownstreams(q: Query, domainId: number, limit = -1, offset = 0): Promise<DownstreamAddress[]> {
  return q<DownstreamAddress>(
    'SELECT priority, weight, port, target FROM inbound_downstreams WHERE domain_id = $1 ORDER BY position LIMIT $2 OFFSET $3',
    [domainId, limit < 0 ? null : limit, offset],
  );
}

/** Admins, downstreams and aliases of a domain, for rendering. */
export async function readParts(q: Query, domainId: number): Promise<Required<DomainParts>> {
  const [admins, downstreams, aliases] = await Promise.all([
    q<{ email: string }>('SELECT email FROM inbound_domain_admins WHERE domain_id = $1 ORDER BY email COLLATE "C"', [domainId]),
    listDownstreams(q, domainId),
    q<{ alias: string }>('SELECT alias FROM inbound_aliases WHERE domain_id = $1 ORDER BY alias COLLATE "C"', [domainId]),
  ]);
  return { admins: admins.map((r) => r.email), downstreams, aliases: aliases.map((r) => r.alias) };
}
