// Owns moving the store's WAL checkpoints off the event loop: a worker thread checkpoints, the store's connection does not.
import { Worker } from 'node:worker_threads';
import type { Db } from './database.js';

/**
 * How often the checkpointing thread copies the WAL into the database. SQLite's own default checkpoints every
 * 1,000 pages (4 MB) inside the COMMIT that crosses it, on the committing thread: at bench:relay's 100 KB messages
 * that is several checkpoints a second, each two fsyncs and up to 4 MB written while the MX waits. Every 200 ms
 * keeps the WAL of a busy MX to a few MB and costs an idle one a read of the WAL index.
 */
export const CHECKPOINT_INTERVAL_MS = 200;

/** The checkpointing thread of one store. */
export interface Checkpointer {
  /** Stops the thread after a last checkpoint. */
  stop(): Promise<void>;
}

/**
 * Turns off the automatic checkpoints of `db` (the store's connection) and starts a thread that checkpoints `file`
 * every `intervalMs`. Should the thread fail, `db` checkpoints automatically again, as SQLite does by default.
 */
export function startCheckpointer(db: Db, file: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpointer {
  const worker = new Worker(new URL('./checkpointer-worker.js', import.meta.url), {
    workerData: { file, intervalMs },
    // Nothing of the process's loaders or flags (a test runner's hooks, --cpu-prof) is needed to checkpoint.
    execArgv: [],
  });
  worker.unref();
  db.pragma('wal_autocheckpoint = 0');
  let stopped: (() => void) | undefined;
  let exited = false;
  const fallBack = () => {
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
  };
  worker.on('message', (m: { failed?: string; stopped?: true }) => {
    if (m.failed) fallBack();
    if (m.stopped) stopped?.();
  });
  worker.on('error', fallBack);
  worker.on('exit', () => {
    exited = true;
    if (stopped) stopped();
    else fallBack();
  });
  return {
    stop() {
      return new Promise<void>((resolve) => {
        if (exited) return resolve();
        const earlier = stopped;
        stopped = () => {
          earlier?.();
          resolve();
        };
        // Unreferenced, the thread would let a process whose last work is this close exit before the reply.
        worker.ref();
        worker.postMessage({ stop: true });
      });
    },
  };
}
