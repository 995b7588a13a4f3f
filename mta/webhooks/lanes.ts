// Owns the dispatcher's lanes: at most n endpoints worked on at once, first come first served, a lane given back once.

/** A lane held by one endpoint's work. `release()` may be called more than once; only the first gives it back. */
export interface Lane {
  release(): void;
  readonly released: boolean;
}

export interface Lanes {
  /** Resolves with a lane once fewer than `size` are held; waiters are served in the order they asked. */
  acquire(): Promise<Lane>;
  /** Lanes held now. */
  readonly held: number;
}

/** Creates `size` lanes (at least 1). */
export function createLanes(size: number): Lanes {
  const max = Math.max(1, Math.floor(size));
  const waiting: ((lane: Lane) => void)[] = [];
  let held = 0;

  function grant(): Lane {
    held++;
    let released = false;
    return {
      get released() {
        return released;
      },
      release() {
        if (released) return;
        released = true;
        held--;
        // Handed straight to the next waiter, so a lane freed is never taken by a later asker first.
        const next = waiting.shift();
        if (next) next(grant());
      },
    };
  }

  return {
    acquire() {
      if (held < max) return Promise.resolve(grant());
      return new Promise<Lane>((resolve) => waiting.push(resolve));
    },
    get held() {
      return held;
    },
  };
}
