// Owns this process's hold on destination limits' connection slots (storage/ports/connection-slots.ts): one taken
// before a session to a limited destination opens, renewed while sessions stay open, given back when each closes.
import type { Logger } from 'pino';
import type { ConnectionSlotStore } from '../../storage/ports/connection-slots.js';

/** How long a slot is held unless renewed: a process killed with its sessions open frees them this long after. */
export const SLOT_LEASE_MS = 30_000;

export interface SlotKeeper {
  /** A free slot of `pattern` under `cap` for this process, or null when every node's sessions fill the cap. */
  take(pattern: string, cap: number): Promise<number | null>;
  /** Gives a slot back (its session closed); never throws: a failure is retried, and the lease lapses regardless. */
  release(pattern: string, slot: number): void;
  /** Stops renewing and gives back what is still held. */
  close(): Promise<void>;
}

export function createSlotKeeper(deps: { store: ConnectionSlotStore; owner: string; now: () => number; leaseMs?: number; logger?: Logger }): SlotKeeper {
  const leaseMs = deps.leaseMs ?? SLOT_LEASE_MS;
  const held = new Set<string>();
  // Releases that failed (storage briefly down): retried before each renewal, which would otherwise keep them held.
  let unreleased: { pattern: string; slot: number }[] = [];
  let timer: NodeJS.Timeout | undefined;
  // Releases on their way to the store: close() waits for them, so a stopped process leaves none held.
  const releasing = new Set<Promise<void>>();
  const keyOf = (pattern: string, slot: number) => `${pattern}\u0000${slot}`;

  async function giveBack(pattern: string, slot: number): Promise<void> {
    try {
      await deps.store.release(pattern, slot, deps.owner);
    } catch (err) {
      unreleased.push({ pattern, slot });
      deps.logger?.warn({ pattern, slot, err: (err as Error).message }, 'connection slot not released; retried at the next renewal');
    }
  }

  async function renew(): Promise<void> {
    const retry = unreleased;
    unreleased = [];
    for (const r of retry) await giveBack(r.pattern, r.slot);
    if (held.size === 0) return;
    const n = await deps.store.renew(deps.owner, deps.now() + leaseMs);
    // A slot lost while its session stays open (this process stalled past the lease): the cap may be passed until
    // that session closes; say so rather than hide it.
    if (n < held.size) deps.logger?.warn({ held: held.size, renewed: n }, 'connection slots lapsed while their sessions were open');
  }

  function arm(): void {
    if (timer) return;
    timer = setInterval(() => {
      if (held.size === 0 && unreleased.length === 0) {
        clearInterval(timer);
        timer = undefined;
        return;
      }
      renew().catch((err: Error) => deps.logger?.warn({ err: err.message }, 'connection slots not renewed'));
    }, Math.max(1, Math.floor(leaseMs / 3)));
    timer.unref();
  }

  return {
    async take(pattern, cap) {
      const now = deps.now();
      const slot = await deps.store.take(pattern, cap, deps.owner, now, now + leaseMs);
      if (slot !== null) {
        held.add(keyOf(pattern, slot));
        arm();
      }
      return slot;
    },
    release(pattern, slot) {
      if (!held.delete(keyOf(pattern, slot))) return;
      arm();
      const p = giveBack(pattern, slot).finally(() => releasing.delete(p));
      releasing.add(p);
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      const all = [...held].map((k) => k.split('\u0000'));
      held.clear();
      for (const [pattern, slot] of all) await giveBack(pattern!, Number(slot));
      await Promise.all(releasing);
    },
  };
}
