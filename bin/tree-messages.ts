// Owns what a serving child of `sluice serve`'s process tree and its primary (bin/supervisor.ts) say to each other
// over node:cluster's IPC channel (the child's end: bin/tree-child.ts). Imports nothing: the primary loads it.

/** The child's place in the tree (0: the first; it alone runs the jobs that must run once per data_dir); not SLUICE_*, which names keys only. */
export const CHILD_SLOT_ENV = '__SLUICE_TREE_SLOT';

/** Message types. */
export const MSG = {
  /** Child → primary: started; `bound` maps listener keys' env variables to the host:port bound. */
  ready: 'sluice:ready',
  /** Child → primary: a scrape of /metrics wants the whole tree's figures. */
  metricsRequest: 'sluice:metrics?',
  /** Primary → child: every child's registry as JSON, for the asking child to sum (or why there are none). */
  metricsAnswer: 'sluice:metrics',
  /** Primary → every child: send your registry as JSON (prom-client's getMetricsAsJSON). */
  metricsCollect: 'sluice:metrics-collect',
  /** Child → primary: its registry as JSON, the answer to metricsCollect `id`. */
  metricsPart: 'sluice:metrics-part',
} as const;

export type ChildMessage =
  | { type: typeof MSG.ready; bound: Record<string, string> }
  | { type: typeof MSG.metricsRequest; id: number }
  | { type: typeof MSG.metricsAnswer; id: number; parts?: unknown[][]; error?: string }
  | { type: typeof MSG.metricsCollect; id: number }
  | { type: typeof MSG.metricsPart; id: number; metrics?: unknown[]; error?: string };
