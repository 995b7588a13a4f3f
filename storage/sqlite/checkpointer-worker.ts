// Owns the WAL checkpoints of the store's database, on a thread of their own (started by storage/sqlite/checkpointer.ts).
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
// A connection of its own: checkpoints copy WAL frames into the database file and fsync both (with synchronous
// NORMAL or FULL, SQLite syncs at every checkpoint), which is the I/O the event loop no longer waits for.
// fileMustExist: the store made the database; a thread that starts late (a loaded machine) after the store was
// closed and its directory removed must fail, never create an empty database there.
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
db.pragma('synchronous = FULL');
db.pragma('wal_autocheckpoint = 0');

/**
 * PASSIVE never waits for readers or writers: it copies what no reader still needs and leaves the rest for the next
 * round (sqlite.org/c3ref/wal_checkpoint_v2.html). With nothing new in the WAL it reads the index and returns.
 */
function checkpoint(): void {
  if (!db.open) return;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // Busy (another process's checkpoint) waits for the next round; anything else is reported and stops this thread,
    // and the store goes back to checkpointing on its own connection.
    if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) return;
    parentPort?.postMessage({ failed: String((err as Error).message) });
    stop();
  }
}

/** Ends the thread: no timer, no connection, no port — nothing left to keep it alive, so it exits. */
function stop(): void {
  clearInterval(timer);
  if (db.open) db.close();
  parentPort?.close();
}

const timer = setInterval(checkpoint, intervalMs);
parentPort?.on('message', (m: { stop?: true }) => {
  if (!m.stop) return;
  clearInterval(timer);
  checkpoint();
  stop();
});
