// Owns capturing a real pino logger's JSON lines in memory, so tests read what an operator would read.
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export interface LogCapture {
  logger: Logger;
  /** Every line written so far, parsed. */
  lines: any[];
  /** Resolves with the first line (already written or to come) that `match` accepts. */
  waitFor(match: (line: any) => boolean): Promise<any>;
}

/** A pino logger at `level` (default debug) whose lines land in `lines`. */
export function captureLogs(level: pino.LevelWithSilent = 'debug'): LogCapture {
  const lines: any[] = [];
  const waiters: { match: (l: any) => boolean; resolve: (l: any) => void }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) {
        const line = JSON.parse(text);
        lines.push(line);
        for (const w of waiters.filter((x) => x.match(line))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
      done();
    },
  });
  return {
    logger: pino({ level }, stream),
    lines,
    waitFor: (match) =>
      new Promise((resolve) => {
        const seen = lines.find(match);
        if (seen) resolve(seen);
        else waiters.push({ match, resolve });
      }),
  };
}
