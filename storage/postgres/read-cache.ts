// Owns the PostgreSQL store's cache of settings read on every request or message (keys, DKIM keys, suppressions,
// sender blocks, scan policies; the served inbound domains and their downstreams): each entry is kept under the
// version its tables had, and checked against a version read that starts after the caller asked, so that a change
// any node committed before is never missed.
import type { Pg } from './database.js';

/** The tables whose changes (any INSERT, UPDATE, DELETE or TRUNCATE, on any node) bump their version. */
export const VERSIONED_TABLES = [
  'accounts', 'api_keys', 'dkim_keys', 'suppressions', 'sender_blocks', 'account_scan_policies',
  'inbound_domains', 'inbound_subscriptions', 'inbound_aliases', 'inbound_downstreams',
] as const;
export type VersionedTable = (typeof VERSIONED_TABLES)[number];

/**
 * Migration 4: the versions and the triggers that bump them. Statement-level, so a statement that changes many rows
 * bumps once; in the writer's transaction, so a version is seen exactly when the change it counts is (read
 * committed). The row is locked until the writer commits: writers of one table serialise there, and these tables
 * change on operators' and tenants' requests and hard bounces, not per message.
 */
export const READ_VERSIONS_SCHEMA = `
  CREATE TABLE sluice_read_versions (name text PRIMARY KEY, version bigint NOT NULL);
  CREATE FUNCTION sluice_bump_read_version() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO sluice_read_versions AS v (name, version) VALUES (TG_TABLE_NAME, 1)
      ON CONFLICT (name) DO UPDATE SET version = v.version + 1;
    RETURN NULL;
  END $$;
${VERSIONED_TABLES.map(
  (t) => `  CREATE TRIGGER ${t}_read_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${t}
    FOR EACH STATEMENT EXECUTE FUNCTION sluice_bump_read_version();`,
).join('\n')}
`;

/** Most entries a store's cache keeps; past it the oldest goes (suppression look-ups are one per recipient). */
export const READ_CACHE_MAX_ENTRIES = 20_000;

export interface ReadCache {
  /**
   * `load()`'s value for `key`, from the cache when none of `tables` changed since it was loaded. Always waits for
   * one version read that started after this call (shared by every caller waiting at the time): measured on
   * bench:outbound, the reads of a send were 5 of its 7.6 statements per message; on bench:relay, the served
   * domain (3 look-ups) and its downstreams 4 of 9.
   */
  get<T>(tables: readonly VersionedTable[], key: string, load: () => Promise<T>): Promise<T>;
}

type Versions = ReadonlyMap<string, number>;

/** No cache: every call loads (a store opened for a one-off command, or a test of the statements themselves). */
export const uncached: ReadCache = { get: (_tables, _key, load) => load() };

/** The cache of one store (one process): its versions are read through `pg`, at most `maxEntries` entries in memory. */
export function createReadCache(pg: Pg, maxEntries = READ_CACHE_MAX_ENTRIES): ReadCache {
  const entries = new Map<string, { tag: string; value: unknown }>();
  let latest: Versions = new Map();
  let inFlight: Promise<Versions> | undefined;
  let next: Promise<Versions> | undefined;

  const read = async (): Promise<Versions> => {
    const rows = await pg.query<{ name: string; version: number }>('SELECT name, version FROM sluice_read_versions');
    latest = new Map(rows.map((r) => [r.name, r.version]));
    return latest;
  };
  /**
   * Versions as of a read sent after this call: the one in flight may have been sent before it, so a caller that
   * finds one waits for the next, which every caller arriving meanwhile shares (one statement for them all).
   */
  const fresh = (): Promise<Versions> => {
    if (!inFlight) {
      inFlight = read().finally(() => (inFlight = undefined));
      return inFlight;
    }
    return (next ??= inFlight
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        return fresh();
      }));
  };

  return {
    async get<T>(tables: readonly VersionedTable[], key: string, load: () => Promise<T>): Promise<T> {
      const tagOf = (v: Versions) => tables.map((t) => v.get(t) ?? 0).join(':');
      const tag = tagOf(await fresh());
      const id = `${tables.join(',')}\u0000${key}`;
      const hit = entries.get(id);
      if (hit && hit.tag === tag) return hit.value as T;
      // Loaded after the versions were read: at least as new as `tag`. Kept only while it is still the latest known.
      const value = await load();
      if (tagOf(latest) === tag) {
        entries.delete(id);
        if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
        entries.set(id, { tag, value });
      }
      return value;
    },
  };
}
