// Owns running the once-per-cluster jobs on one process at a time: this process tries for the lead every third of
// its term, starts the jobs when it gets it, stops them when it loses it, and gives it up when it stops.
import crypto from 'node:crypto';
import os from 'node:os';
import type { JobLeadStore } from '../../storage/ports/job-leads.js';

/** How long a lead lasts unrenewed: a dead leader's jobs move to another process within this (STORAGE: within a minute). */
export const LEAD_TTL_MS = 60_000;

/** The jobs one lead covers. */
export interface LedJobs {
  start(): void;
  stop(): Promise<void>;
}

export interface LeadershipDeps {
  store: JobLeadStore;
  /** The job's name in the store (one lead for a set of jobs that must run together). */
  job: string;
  jobs: LedJobs;
  now: () => number;
  ttlMs?: number;
  /**
   * Told when this process gains or loses the lead (`stopping`: it gave the lead up because it stops), and of a
   * failed try (storage down: the lead is kept until it lapses).
   */
  onChange?: (leading: boolean, stopping: boolean) => void;
  onError?: (err: unknown) => void;
}

/** A name for this process that no other process on any node shares: host, pid and a random tag. */
export function leaderName(): string {
  return `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
}

/**
 * Whether `owner` names a process of this host that is gone (killed, crashed): its lead can be taken at once rather
 * than when it lapses, so a restart after kill -9 does not wait a minute for its own housekeeping.
 */
export function deadHere(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== os.hostname() || !/^\d+$/.test(pid ?? '') || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Leadership of one job: `tick()` tries once (tests call it; `start()` runs it now and every ttl/3 on an unref'd
 * timer). A try that fails (storage unavailable) keeps the jobs running only while the last lead lasts: past it, they
 * stop, since another process may have taken over.
 */
export function createLeadership(deps: LeadershipDeps) {
  const ttl = deps.ttlMs ?? LEAD_TTL_MS;
  const owner = leaderName();
  let leading = false;
  let heldUntil = 0;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;

  const become = async (lead: boolean, stopping = false) => {
    if (lead === leading) return;
    leading = lead;
    if (lead) deps.jobs.start();
    else await deps.jobs.stop();
    deps.onChange?.(lead, stopping);
  };

  async function tryOnce(): Promise<void> {
    const at = deps.now();
    let got: boolean;
    try {
      got = await deps.store.tryLead(deps.job, owner, at, ttl);
      if (!got) {
        const holder = await deps.store.leader(deps.job);
        if (holder && deadHere(holder.owner)) got = await deps.store.tryLead(deps.job, owner, at, ttl, holder.owner);
      }
      if (got) heldUntil = at + ttl;
    } catch (err) {
      deps.onError?.(err);
      // Unknown: the lead written last still holds until heldUntil; only then may another process have it.
      got = leading && deps.now() < heldUntil;
    }
    await become(got);
  }

  /** One try; concurrent calls share it. */
  const tick = (): Promise<void> => (ticking ??= tryOnce().finally(() => (ticking = undefined)));

  return {
    owner,
    leading: () => leading,
    tick,
    start(): void {
      void tick();
      timer = setInterval(() => void tick(), Math.max(1, Math.floor(ttl / 3)));
      timer.unref();
    },
    /** Stops the jobs (if leading) and gives the lead up, so another process takes it at once. */
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await ticking;
      if (!leading) return;
      await become(false, true);
      await deps.store.resign(deps.job, owner).catch((err: unknown) => deps.onError?.(err));
    },
  };
}
