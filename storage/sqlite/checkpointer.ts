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

/**
 * How long `stop()` waits for the thread to finish its last checkpoint and exit before terminating it. A PASSIVE
 * checkpoint never waits for a lock (busy_timeout 0), so only a stalled disk (or a starved machine) takes this
 * long; the store's own connection checkpoints at its close, so a checkpoint cut short loses nothing.
 */
export const STOP_TIMEOUT_MS = 10_000;

/** The checkpointing thread of one store. */
export interface Checkpointer {
  /**
   * Stops the thread after a last checkpoint and resolves once it has exited, so nothing of it touches the store's
   * files any more (a caller may remove them at once). Never hangs: past `stopTimeoutMs` the thread is terminated.
   * Idempotent: every call resolves with the same exit.
   */
  stop(): Promise<void>;
  /** Whether the thread has exited (for tests and the close path). */
  readonly exited: boolean;
}

/**
 * Turns off the automatic checkpoints of `db` (the store's connection) and starts a thread that checkpoints `file`
 * every `intervalMs`. Should the thread fail, `db` checkpoints automatically again, as SQLite does by default.
 */
export function startCheckpointer(
  db: Db,
  file: string,
  intervalMs = CHECKPOINT_INTERVAL_MS,
  stopTimeoutMs = STOP_TIMEOUT_MS,
): Checkpointer {
  const worker = new Worker(new URL('./checkpointer-worker.js', import.meta.url), {
    workerData: { file, intervalMs },
    // Nothing of the process's loaders or flags (a test runner's hooks, --cpu-prof) is needed to checkpoint.
    execArgv: [],
  });
  db.pragma('wal_autocheckpoint = 0');
  let exited = false;
  let stopping: Promise<void> | undefined;
  const exit = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      exited = true;
      // Exited on its own (a failure): the store's connection checkpoints again. Not once the store is closing.
      if (!stopping && db.open) db.pragma('wal_autocheckpoint = 1000');
      resolve();
    }),
  );
  const fallBack = () => {
    if (!stopping && db.open) db.pragma('wal_autocheckpoint = 1000');
  };
  worker.on('message', (m: { failed?: string }) => {
    if (m.failed) fallBack();
  });
  worker.on('error', fallBack);
  // A running store does not keep the process alive by itself; stop() refs the thread while it waits for it. After
  // the listeners: a 'message' listener refs the worker's port again.
  worker.unref();
  return {
    get exited() {
      return exited;
    },
    stop() {
      stopping ??= (async () => {
        if (exited) return;
        // Unreferenced, the thread would let a process whose last work is this close exit before the thread has.
        worker.ref();
        worker.postMessage({ stop: true });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), stopTimeoutMs)));
        // The reply alone is not enough: the thread may still be starting (then it opens the database after this
        // message) or closing its connection; only its exit means it is done with the files.
        if ((await Promise.race([exit, late])) === 'late') await worker.terminate();
        clearTimeout(timer);
        await exit;
      })();
      return stopping;
    },
  };
}
