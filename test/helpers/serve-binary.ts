// Owns running the built `sluice serve` binary as a child process for fault tests (kill -9 and restart).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Test } from 'tap';
import { testEnv } from './stack.js';

/** The compiled CLI (`npm test` builds first). */
export const BIN = path.resolve('dist/bin/sluice.js');

/**
 * Starts `sluice serve` (with `args`, e.g. `--only api`) on `dataDir` with every listener on loopback port 0 and `env` on top (undefined removes a variable); killed with SIGKILL at
 * teardown if still running. `lines` collects its JSON log lines (`waitForLine` awaits one); `listening` resolves with the `listening` line
 * (rejects if the process exits first).
 */
export function serveBinary(t: Test, dataDir: string, env: Record<string, string | undefined>, args: string[] = []) {
  // A variable given as undefined is left out (e.g. SLUICE_LOG_LEVEL, for a test that sets the level in a file).
  const merged = { ...process.env, ...testEnv(dataDir), SLUICE_LOG_LEVEL: 'info', ...env };
  const child = spawn(process.execPath, [BIN, 'serve', ...args], {
    env: Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines: any[] = [];
  const waiters: { match: (l: any) => boolean; resolve: (l: any) => void }[] = [];
  const listening = new Promise<any>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const obj = JSON.parse(line);
        lines.push(obj);
        for (const w of waiters.filter((x) => x.match(obj))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(obj);
        }
        if (obj.msg === 'listening') resolve(obj);
      } catch {
        /* not a log line */
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  /** Resolves with the first log line (already seen or to come) that `match` accepts. */
  const waitForLine = (match: (l: any) => boolean) =>
    new Promise<any>((resolve) => {
      const seen = lines.find(match);
      if (seen) resolve(seen);
      else waiters.push({ match, resolve });
    });
  return { child, lines, listening, waitForLine };
}

/** Resolves once `c` has exited (at once if it already has: with a code, or killed by a signal, whose exitCode stays null). */
export const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

/** The `default` account's API key a first start left in data_dir/initial-api-key (read after `listening`). */
export const firstKey = (dataDir: string) => fs.readFileSync(path.join(dataDir, 'initial-api-key'), 'utf8').trim();
