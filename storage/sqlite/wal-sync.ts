// Owns making the store's commits durable off the event loop: fdatasync of the -wal file on libuv's thread pool.
import fs from 'node:fs';

/**
 * The store's connection runs with synchronous=NORMAL, so a COMMIT appends its frames to the WAL with write() and
 * returns without an fsync (sqlite.org/pragma.html#pragma_synchronous: "WAL mode with synchronous=NORMAL …
 * transactions … might roll back following a power loss"). synchronous=FULL differs in exactly one step, an fsync
 * of the WAL after each commit (sqlite.org/wal.html "Performance Considerations"), which then blocks the event loop
 * (13–20 % of the MX's main thread in bench:relay's profiles). This does that step itself, on the thread pool: after
 * a COMMIT returns, `afterCommit()` resolves once an fdatasync of the WAL that began after that COMMIT has finished.
 * The WAL is append-only between checkpoints and fsync covers the whole inode, so that fdatasync holds every frame
 * up to the commit frame, and the commit is as durable as FULL would have made it before anyone is told "stored".
 *
 * Commits that end while a sync is running join the next one (one in flight at a time, like the group commit
 * itself). Headers written when the WAL restarts and the checkpoints themselves keep SQLite's own syncs
 * (NORMAL still syncs at checkpoints). The -wal file carries no POSIX locks (those are on the database and -shm
 * files), so holding a descriptor of our own to it disturbs none of SQLite's (sqlite.org/lockingv3.html).
 */
export interface WalSync {
  /** Resolves once every frame committed before the call is on disk; rejects with the fdatasync's error. */
  afterCommit(): Promise<void>;
  /** fdatasync calls made so far (tests, the commit metrics). */
  readonly syncs: number;
  /** Closes the descriptor once no sync is running (again: nothing); `afterCommit` calls after it reject. */
  close(): Promise<void>;
}

/** Syncs the WAL at `walPath` (made empty, 0600, if the connection has not made it yet: SQLite takes it as it is). */
export function createWalSync(walPath: string): WalSync {
  const fd = fs.openSync(walPath, fs.constants.O_RDONLY | fs.constants.O_CREAT, 0o600);
  type Waiter = { resolve: () => void; reject: (err: unknown) => void };
  let waiting: Waiter[] = [];
  let running = false;
  let closed = false;
  let syncs = 0;
  let onIdle: (() => void) | undefined;

  function kick(): void {
    if (running) return;
    if (waiting.length === 0 || closed) {
      onIdle?.();
      return;
    }
    // Everything queued so far committed before this sync starts: it covers all of them.
    const covered = waiting;
    waiting = [];
    running = true;
    syncs++;
    fs.fdatasync(fd, (err) => {
      running = false;
      for (const w of covered) {
        if (err) w.reject(err);
        else w.resolve();
      }
      kick();
    });
  }

  return {
    afterCommit() {
      if (closed) return Promise.reject(new Error('the WAL sync is closed'));
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject });
        kick();
      });
    },
    get syncs() {
      return syncs;
    },
    async close() {
      if (running || waiting.length > 0) await new Promise<void>((r) => (onIdle = r));
      if (closed) return;
      closed = true;
      fs.closeSync(fd);
    },
  };
}
