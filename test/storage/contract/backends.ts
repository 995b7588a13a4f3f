// Owns the storage contract suite's backends and fixtures: every contract test runs against each Store listed here,
// through the ports only (storage/ports/), so a later backend joins the list and the suite runs unchanged.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { openStore } from '../../../storage/open.js';
import type { Store } from '../../../storage/ports/store.js';
import { openPostgresStore } from '../../../storage/postgres/store.js';
import { TEST_BACKENDS } from '../../helpers/backends.js';
import { freshDatabase, psql } from '../../helpers/pg-cluster.js';
import { tempDir } from '../../helpers/stack.js';

// The record builder lives where a process without tap can import it (the stall measurements).
export { message } from '../../helpers/accept-record.js';

/** One backend under contract. */
export interface Backend {
  name: string;
  /**
   * Opens a store on `location` (a fresh temp directory per test). Opening it again on the same location is another
   * process's view of the same data: a second worker, or a restart.
   */
  open(location: string, now: () => number): Promise<Store>;
  /**
   * Puts the bodies of the store opened on `location` on the file system of `dir` (a small disk a test fills):
   * SQLite's spool is in its data_dir already; PostgreSQL's body tables move to a tablespace there.
   */
  confine(location: string, dir: string): Promise<void>;
}

/** A database per location: opening the same location again is another node on the same database. */
const databases = new Map<string, Promise<string>>();

const ALL: readonly Backend[] = [
  { name: 'sqlite', open: (dataDir, now) => openStore({ dataDir }, { now }), confine: async () => {} },
  {
    name: 'postgres',
    async open(location, now) {
      let url = databases.get(location);
      if (!url) databases.set(location, (url = freshDatabase()));
      // The suite moves time by hand: leases follow its clock (test/storage/postgres/lease-clock.test.ts covers the database's).
      return openPostgresStore({ url: await url, poolSize: 4, now, leaseClock: 'injected' });
    },
    async confine(location, dir) {
      const url = await databases.get(location);
      if (!url) throw new Error(`no database opened on ${location}`);
      const name = url.slice(url.lastIndexOf('/') + 1);
      // The server runs as its own user: it must reach the mount point and own the tablespace's directory.
      const ts = path.join(dir, 'tablespace');
      fs.chmodSync(dir, 0o711);
      fs.mkdirSync(ts);
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', ts]);
      await psql(`CREATE TABLESPACE small_${name} LOCATION '${ts}'`);
      await psql(`ALTER TABLE message_bodies SET TABLESPACE small_${name}; ALTER TABLE body_blobs SET TABLESPACE small_${name};
        ALTER TABLE body_chunks SET TABLESPACE small_${name}`, name);
    },
  },
];

/** The backends the contract holds for: those of SLUICE_TEST_BACKENDS (test/helpers/backends.ts). */
export const BACKENDS: readonly Backend[] = TEST_BACKENDS.map((name) => ALL.find((b) => b.name === name) as Backend);

/**
 * What a contract test is given: a store, a way to open more views of the same data (closed at teardown), and the
 * clock every view was opened with. Port methods take their times as arguments; the clock is what a backend reads
 * by itself (the time of a failed write, for health), so a test sets it rather than sleeping.
 */
export interface Fixture {
  store: Store;
  /** Another view of the same data (another worker process, or the store after a restart). */
  reopen(): Promise<Store>;
  /** The injected clock (ms) of every view of this test; starts at 0, set it to move time. */
  clock: { now: number };
}

/** Runs `fn` as one tap subtest per backend, on a fresh location, closing every store it opened afterwards. */
export function contract(name: string, fn: (t: Test, f: Fixture) => Promise<void>): void {
  for (const backend of BACKENDS) t.test(`${backend.name}: ${name}`, (t) => withFixture(t, backend, fn));
}

/**
 * Runs `fn` in `t` on a fresh location of `backend`; at `t`'s teardown every store it opened is closed, and only
 * then is the location removed.
 */
export async function withFixture(t: Test, backend: Backend, fn: (t: Test, f: Fixture) => Promise<void>): Promise<void> {
  const opened: Store[] = [];
  const location = tempDir(t);
  // tap runs teardowns last-registered first (@tapjs/after pops them): registered after tempDir's removal, this
  // runs before it. The other way round the directory was emptied under open stores, whose checkpointing thread
  // then wrote into it while rmSync ran (ENOTEMPTY), after which tap dropped the closes.
  t.teardown(async () => {
    for (const s of opened.reverse()) await s.close();
  });
  const clock = { now: 0 };
  const open = async () => {
    const s = await backend.open(location, () => clock.now);
    opened.push(s);
    return s;
  };
  await fn(t, { store: await open(), reopen: open, clock });
}

/** A parent account (the rows the queue and outbox hang off), by handle. */
export async function account(store: Store, handle: string, now = 1_000): Promise<number> {
  const res = await store.accounts.createAccount({ handle, companyName: null, parentId: null, now });
  if (!res.ok) throw new Error(`account ${handle}: ${res.reason}`);
  return res.value.id;
}

