// Owns the log of the primary of `sluice serve`'s process tree: a few lines in pino's shape, written without pino.
import fs from 'node:fs';

/** What the supervisor logs with (pino's call shape: fields, then the message). */
export interface PrimaryLogger {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  flush(): void;
}

/** pino's numeric levels, so a reader of the log sees the primary's lines as the children's. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** Bytes of lines held while stdout cannot take them; past it, lines are dropped (as bin/log-destination.ts does). */
const BACKLOG_BYTES = 1024 * 1024;
/** How soon a write that found the pipe full (EAGAIN) is tried again. */
const RETRY_MS = 50;

/**
 * Writes lines to `fd` in order without ever blocking the event loop: one fs.write at a time off the loop (a pipe
 * whose reader stalls holds a pool thread, not the supervision of the children), EAGAIN retried, partial writes
 * continued, lines past BACKLOG_BYTES dropped, any other error (a full disk) losing the line.
 */
function fdWriter(fd: number): { write: (line: string) => void; flush: () => void } {
  let pending: Buffer[] = [];
  let bytes = 0;
  let busy = false;
  const pump = () => {
    if (busy || pending.length === 0) return;
    busy = true;
    const buf = Buffer.concat(pending);
    pending = [];
    fs.write(fd, buf, (err, n) => {
      busy = false;
      const code = (err as NodeJS.ErrnoException | null)?.code;
      const rest = code === 'EAGAIN' ? buf : err ? Buffer.alloc(0) : buf.subarray(n);
      bytes -= buf.length - rest.length;
      if (rest.length > 0) pending.unshift(rest);
      if (code === 'EAGAIN') setTimeout(pump, RETRY_MS).unref();
      else pump();
    });
  };
  return {
    write(line) {
      const buf = Buffer.from(line);
      if (bytes + buf.length > BACKLOG_BYTES) return;
      bytes += buf.length;
      pending.push(buf);
      pump();
    },
    // At exit: what has not gone out is tried once, synchronously; a full pipe or disk loses it rather than hang.
    flush() {
      if (busy || pending.length === 0) return;
      try {
        fs.writeSync(fd, Buffer.concat(pending));
        pending = [];
        bytes = 0;
      } catch {
        // the process is ending; losing the tail beats hanging
      }
    },
  };
}

/**
 * The primary writes a handful of lines (children started, a child restarted, shutting down): pino and its
 * asynchronous destination cost ~7 MB of RSS (issue 32: bare node 44 MB, with pino 50.9 MB), so its lines are
 * composed here as pino composes them (`level`, `time`, `pid`, the fields, `msg`) and written to stdout (fd 1) by
 * fdWriter, so a slow or full log never stops the primary from restarting children or passing signals on.
 * `write` replaces the destination (tests).
 */
export function createPrimaryLogger(level: string, write?: (line: string) => void): PrimaryLogger {
  const threshold = LEVELS[level] ?? LEVELS.info!;
  const out = write ? { write, flush: () => {} } : fdWriter(1);
  const line = (lvl: number, fields: Record<string, unknown>, msg: string) => {
    if (lvl < threshold) return;
    try {
      out.write(`${JSON.stringify({ level: lvl, time: Date.now(), pid: process.pid, ...fields, msg })}\n`);
    } catch {
      // the log cannot be written: the tree goes on serving mail
    }
  };
  return {
    info: (fields, msg) => line(30, fields, msg),
    warn: (fields, msg) => line(40, fields, msg),
    flush: () => out.flush(),
  };
}
