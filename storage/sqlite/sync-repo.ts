// Owns the two shapes of a repository whose work is synchronous on its connection: as written, and as a port.

/** A port's methods as a synchronous repository writes them: the same arguments, the value itself. */
export type Sync<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K] };

/**
 * The port over a synchronous repository called directly on its connection, without group commit or lock waits:
 * for tests and tools that hold a connection of their own. The store wires the same repository through its
 * commit batcher (storage/sqlite/store.ts).
 */
export function direct<T extends object>(repo: Sync<T>): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(repo)) {
    if (typeof fn === 'function') out[name] = async (...args: unknown[]) => (fn as (...a: unknown[]) => unknown).apply(repo, args);
  }
  return out as T;
}
