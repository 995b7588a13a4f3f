// Owns what a serving child of `sluice serve`'s process tree and its primary (bin/supervisor.ts) say to each other
// over node:cluster's IPC channel, and the child's end of it.
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** The child's place in the tree (0: the first; it alone runs the jobs that must run once per data_dir); not SLUICE_*, which names keys only. */
export const CHILD_SLOT_ENV = '__SLUICE_TREE_SLOT';

/** Message types (prom-client's own aggregation messages travel beside these). */
export const MSG = {
  /** Child → primary: started; `bound` maps listener keys' env variables to the host:port bound. */
  ready: 'sluice:ready',
  /** Child → primary: a scrape of /metrics wants the whole tree's figures. */
  metricsRequest: 'sluice:metrics?',
  /** Primary → child: the aggregated exposition (or why there is none). */
  metricsAnswer: 'sluice:metrics',
} as const;

export type ChildMessage =
  | { type: typeof MSG.ready; bound: Record<string, string> }
  | { type: typeof MSG.metricsRequest; id: number }
  | { type: typeof MSG.metricsAnswer; id: number; text?: string; error?: string };

/** This process's end of the tree, when it is a serving child. */
export interface TreeChild {
  slot: number;
  /** Tells the primary this child serves, with the addresses it bound (child 0's are what the others bind). */
  ready(bound: Record<string, string>): void;
  /** Answers GET /metrics with every child's figures summed (prom-client AggregatorRegistry in the primary). */
  treeMetrics(): Promise<string>;
  /** Resolves when the IPC channel closes: the primary is gone (kill -9), so the child drains and exits too. */
  orphaned: Promise<void>;
}

/** The child's end, or undefined in a process that is no child of a tree (server.processes = 1, or the primary). */
export function treeChild(registry: Registry): TreeChild | undefined {
  if (!cluster.isWorker || process.env[CHILD_SLOT_ENV] === undefined) return undefined;
  // Constructing it installs prom-client's answer to the primary's requests, for our registry rather than its global one.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  let next = 0;
  const waiting = new Map<number, { resolve: (t: string) => void; reject: (e: Error) => void }>();
  process.on('message', (m: ChildMessage) => {
    if (m?.type !== MSG.metricsAnswer) return;
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.text !== undefined) w?.resolve(m.text);
    else w?.reject(new Error(m.error ?? 'no answer'));
  });
  const orphaned = new Promise<void>((resolve) => process.once('disconnect', () => resolve()));
  return {
    slot: Number(process.env[CHILD_SLOT_ENV]),
    ready: (bound) => process.send?.({ type: MSG.ready, bound }),
    treeMetrics: () =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        process.send?.({ type: MSG.metricsRequest, id });
      }),
    orphaned,
  };
}
