// Owns the log of the primary of `sluice serve`'s process tree: a few lines in pino's shape, written without pino.

/** What the supervisor logs with (pino's call shape: fields, then the message). */
export interface PrimaryLogger {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  flush(): void;
}

/** pino's numeric levels, so a reader of the log sees the primary's lines as the children's. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * The primary writes a handful of lines (children started, a child restarted, shutting down): pino and its
 * asynchronous destination cost ~7 MB of RSS (issue 32: measured by importing each into a bare node), so its lines
 * are composed here as pino composes them (`level`, `time`, `pid`, the fields, `msg`) and written to stdout, which
 * node writes synchronously to files and pipes on Linux. A write that fails (a full disk, a closed pipe) loses the
 * line and never stops the primary: the children's own logs handle a full disk (bin/log-destination.ts).
 */
export function createPrimaryLogger(level: string, write: (line: string) => void = (l) => void process.stdout.write(l)): PrimaryLogger {
  const threshold = LEVELS[level] ?? LEVELS.info!;
  process.stdout.on('error', () => {});
  const line = (lvl: number, fields: Record<string, unknown>, msg: string) => {
    if (lvl < threshold) return;
    try {
      write(`${JSON.stringify({ level: lvl, time: Date.now(), pid: process.pid, ...fields, msg })}\n`);
    } catch {
      // the log cannot be written: the tree goes on serving mail
    }
  };
  return {
    info: (fields, msg) => line(30, fields, msg),
    warn: (fields, msg) => line(40, fields, msg),
    flush: () => {},
  };
}
