// Owns the registry of `sluice serve` processes on a data_dir (data_dir/run/serve-<pid>.json): `sluice reload`
// signals them, `sluice restore` refuses to run while one lives.
import fs from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir, writePrivateFile } from '../storage/private-files.js';

export interface ServeProcess {
  pid: number;
  roles: string[];
  startedAt: number;
}

/** The directory of the registry (left out of backups: it describes processes, not state). */
export function runDir(dataDir: string): string {
  return path.join(dataDir, 'run');
}

const fileOf = (dataDir: string, pid: number) => path.join(runDir(dataDir), `serve-${pid}.json`);

/**
 * Is `pid` a live Sluice process? `kill(pid, 0)` says whether it exists (EPERM: it does, under another user); on
 * Linux its command line must name sluice too, so a pid reused by another program after a crash is not signalled.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let cmdline: string;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    // Without /proc (not Linux) existence is all there is to go by; with it, an unreadable entry is a gone process.
    return !fs.existsSync('/proc/self/cmdline');
  }
  return cmdline.includes('sluice');
}

/** Registers this process; returns the function that removes the entry at shutdown. */
export function registerServe(dataDir: string, roles: readonly string[], now: number): () => void {
  ensurePrivateDir(runDir(dataDir));
  const file = fileOf(dataDir, process.pid);
  const entry: ServeProcess = { pid: process.pid, roles: [...roles], startedAt: now };
  writePrivateFile(file, JSON.stringify(entry) + '\n');
  return () => fs.rmSync(file, { force: true });
}

/** The live `sluice serve` processes of `dataDir`; entries of dead ones (a crash, kill -9) are removed on the way. */
export function runningServes(dataDir: string): ServeProcess[] {
  let names: string[];
  try {
    names = fs.readdirSync(runDir(dataDir));
  } catch {
    return [];
  }
  const out: ServeProcess[] = [];
  for (const name of names.filter((n) => /^serve-\d+\.json$/.test(n)).sort()) {
    const file = path.join(runDir(dataDir), name);
    let entry: ServeProcess;
    try {
      entry = JSON.parse(fs.readFileSync(file, 'utf8')) as ServeProcess;
    } catch {
      continue;
    }
    if (alive(entry.pid)) {
      out.push(entry);
    } else {
      try {
        fs.rmSync(file, { force: true });
      } catch {
        // Another user's entry: leave it; it is ignored all the same.
      }
    }
  }
  return out;
}
