// Owns which storage backends the tests run on (SLUICE_TEST_BACKENDS) and the per-backend loop of end-to-end files.
import type { Test } from 'tap';
import t from 'tap';

/** Every storage backend Sluice has (storage.backend). */
export const BACKEND_NAMES = ['sqlite', 'postgres'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/**
 * The backends this test run covers: SLUICE_TEST_BACKENDS (comma-separated names), by default both (a machine
 * without PostgreSQL sets `sqlite`; .ci/run installs it). An unknown name is refused, not skipped.
 */
export const TEST_BACKENDS: readonly BackendName[] = (process.env.SLUICE_TEST_BACKENDS ?? BACKEND_NAMES.join(',')).split(',').map((raw) => {
  const name = raw.trim();
  const known = BACKEND_NAMES.find((b) => b === name);
  if (!known) throw new Error(`SLUICE_TEST_BACKENDS: no backend "${name}" (${BACKEND_NAMES.join(', ')})`);
  return known;
});

/**
 * Registers `fn` as one top-level tap subtest per backend of TEST_BACKENDS, named `backend: name`; `fn` starts its
 * stack (or world) on the backend it is given, so the same end-to-end test holds on each. `skip` (a reason) skips
 * it on every backend, as tap's own option does (a daemon missing on this machine).
 */
export function onBackends(name: string, fn: (t: Test, backend: BackendName) => Promise<void>, opts: { skip?: string | false } = {}): void {
  for (const backend of TEST_BACKENDS) t.test(`${backend}: ${name}`, { skip: opts.skip ?? false }, (t) => fn(t, backend));
}

/** One end-to-end test of a file, given the backend to start its stack on. */
export type BackendTest = (t: Test, backend: BackendName) => Promise<void>;

/**
 * The tests of a file too long to run twice within one tap timeout: the cases module registers them here, and one
 * entry file per backend (`x.test.ts` on SQLite, `x-postgres.test.ts`) runs them, each in its own process, so tap's
 * parallel jobs share them out.
 */
export class BackendCases {
  private readonly cases: { name: string; fn: BackendTest }[] = [];

  /** Adds a test; nothing runs until an entry file calls `run`. */
  test(name: string, fn: BackendTest): void {
    this.cases.push({ name, fn });
  }

  /** Registers every test as a tap subtest on `backend`, skipped when SLUICE_TEST_BACKENDS leaves the backend out. */
  run(backend: BackendName): void {
    const skip = TEST_BACKENDS.includes(backend) ? false : `SLUICE_TEST_BACKENDS leaves ${backend} out`;
    for (const c of this.cases) t.test(`${backend}: ${c.name}`, { skip }, (t) => c.fn(t, backend));
  }
}
