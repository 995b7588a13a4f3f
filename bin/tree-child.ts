// Owns a serving child's end of `sluice serve`'s process tree (bin/tree-messages.ts): readiness, the tree's metrics
// summed here with prom-client (the primary only collects, so it need not load prom-client), and orphan detection.
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { CHILD_SLOT_ENV, MSG, type ChildMessage } from './tree-messages.js';

/** This process's end of the tree, when it is a serving child. */
export interface TreeChild {
  slot: number;
  /** Tells the primary this child serves, with the addresses it bound (child 0's are what the others bind). */
  ready(bound: Record<string, string>): void;
  /** Answers GET /metrics with every child's figures, collected by the primary and summed here. */
  treeMetrics(): Promise<string>;
  /** Resolves when the IPC channel closes: the primary is gone (kill -9), so the child drains and exits too. */
  orphaned: Promise<void>;
}

/** The child's end, or undefined in a process that is no child of a tree (server.processes = 1, or the primary). */
export function treeChild(registry: Registry): TreeChild | undefined {
  if (!cluster.isWorker || process.env[CHILD_SLOT_ENV] === undefined) return undefined;
  let next = 0;
  const waiting = new Map<number, { resolve: (t: string) => void; reject: (e: Error) => void }>();
  process.on('message', (m: ChildMessage) => {
    if (m?.type === MSG.metricsCollect) {
      const id = m.id;
      registry.getMetricsAsJSON().then(
        (metrics) => process.connected && process.send?.({ type: MSG.metricsPart, id, metrics }),
        (err: Error) => process.connected && process.send?.({ type: MSG.metricsPart, id, error: err.message }),
      );
      return;
    }
    if (m?.type !== MSG.metricsAnswer) return;
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (!w) return;
    // Summed as prom-client's cluster aggregator does: by each metric's `aggregator` (sum, or `first` for the gauges
    // read from the shared store: mta/metrics.ts marks them).
    if (m.parts) {
      try {
        AggregatorRegistry.aggregate(m.parts as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics().then(w.resolve, w.reject);
      } catch (err) {
        w.reject(err as Error);
      }
    } else w.reject(new Error(m.error ?? 'no answer'));
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
