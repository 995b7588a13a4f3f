// Owns where `sluice serve` writes its log: an asynchronous destination that never stops the process, nor blocks its
// listeners, when the log's disk is full or its reader is slow (issue 25 item 5).
import pino from 'pino';

/**
 * Log bytes held while the destination cannot take them (a full disk, a stalled pipe): past it, new lines are
 * dropped and counted instead of growing memory without bound.
 */
export const LOG_BACKLOG_BYTES = 16 * 1024 * 1024;

/** The errors of a destination with no room: the disk or the quota is full. */
const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);

/** The destination, and how many lines it dropped since its last write that succeeded. */
export interface LogDestination {
  stream: ReturnType<typeof pino.destination>;
  dropped(): number;
  /** The disk of the log had no room at the last write. */
  full(): boolean;
}

/**
 * An asynchronous pino destination on `fd` (sonic-boom). Left alone, sonic-boom answers ENOSPC by emitting 'error',
 * which pino re-emits with no listener: an uncaught exception, then pino's exit handler calls `flushSync`, which
 * retries ENOSPC forever with a blocking sleep — the process neither serves nor exits. Here a write error is kept
 * (the lines wait in memory up to LOG_BACKLOG_BYTES and are retried with the next line; EAGAIN is retried by
 * sonic-boom itself), lines past the backlog are dropped and counted, and `flushSync` gives up at once while the
 * disk is full. The first line written after a full disk says how many lines were lost. `backlogBytes`: tests.
 */
export function createLogDestination(fd: number, backlogBytes = LOG_BACKLOG_BYTES): LogDestination {
  const stream = pino.destination({ dest: fd, sync: false, maxLength: backlogBytes });
  let dropped = 0;
  let noRoom = false;
  let lastError: string | undefined;
  // sonic-boom starts a write only for a line it keeps: with the backlog full, every line is dropped and nothing
  // would ever try the disk again, even once it has room. A dropped line tries it (one write of at most maxWrite,
  // 16 KiB, as a kept line would while the disk is full).
  const internals = stream as unknown as { _writing?: boolean; _actualWrite?: () => void };
  if (typeof internals._writing !== 'boolean' || typeof internals._actualWrite !== 'function') {
    throw new Error('sonic-boom internals changed: _writing or _actualWrite is gone; re-check bin/log-destination.ts');
  }
  stream.on('drop', () => {
    dropped++;
    if (!internals._writing) internals._actualWrite!();
  });
  stream.on('error', (err: NodeJS.ErrnoException) => {
    // Kept, not thrown: the process must go on serving mail when its log cannot be written (Postfix's maillog
    // works the same way through syslog, which drops). The lines stay queued and go out with the next write.
    noRoom = NO_ROOM.has(err.code ?? '');
    lastError = err.code ?? err.message;
  });
  stream.on('write', () => {
    if (!noRoom && dropped === 0) return;
    const lost = dropped;
    noRoom = false;
    dropped = 0;
    if (lost > 0) stream.write(`${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, msg: 'log lines dropped while the log could not be written', dropped: lost, reason: lastError })}\n`);
  });
  const flushSync = stream.flushSync.bind(stream);
  stream.flushSync = () => {
    // At exit pino flushes synchronously; with no room that would retry forever (sonic-boom sleeps and loops).
    if (noRoom) return;
    try {
      flushSync();
    } catch {
      // not ready yet, or an error it does not retry: the process is ending; losing the tail beats hanging
    }
  };
  return { stream, dropped: () => dropped, full: () => noRoom };
}
