// Owns the benches' CPU accounting: CPU seconds of a running process (from /proc) and of a finished command.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

/** Clock ticks per second of /proc's utime/stime (USER_HZ: 100 on every Linux Node runs on). */
const TICKS = 100;

/** Fields of /proc/<pid>/stat after the parenthesised command name (field 3 on), or undefined when unreadable. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * User + system CPU seconds a live process (all its threads) and its live children have used so far; NaN when
 * unreadable. The children count because `sluice serve` with server.processes > 1 serves from children of a
 * primary (bin/supervisor.ts); a child that died meanwhile takes its seconds with it.
 */
export function cpuSeconds(pid: number): number {
  const own = statFields(pid);
  if (!own) return NaN;
  // utime and stime are fields 14 and 15 (1-based); ppid is field 4.
  const cpu = (f: string[]) => (Number(f[11]) + Number(f[12])) / TICKS;
  let total = cpu(own);
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const f = statFields(Number(name));
    if (f && Number(f[1]) === pid) total += cpu(f);
  }
  return total;
}

/**
 * CPU seconds of a live process's main thread alone (its event loop: /proc/<pid>/task/<pid>), NaN when unreadable.
 * Against `cpuSeconds` it shows what worker threads (the CPU pool, libuv's pool) took off the event loop.
 */
export function mainThreadCpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return NaN;
  }
}

/**
 * A CPU stopwatch over a live process: `stop()` gives the seconds it used (all threads and live children), the
 * share of one core, and the seconds of its main thread (the event loop).
 */
export function cpuMeter(pid: number): { stop: () => { seconds: number; cores: number; mainSeconds: number } } {
  const c0 = cpuSeconds(pid);
  const m0 = mainThreadCpuSeconds(pid);
  const t0 = performance.now();
  return {
    stop() {
      const seconds = cpuSeconds(pid) - c0;
      return { seconds, cores: seconds / ((performance.now() - t0) / 1000), mainSeconds: mainThreadCpuSeconds(pid) - m0 };
    },
  };
}

/** Formats a CPU figure: "12.3 s (1.45 cores)". */
export function formatCpu(c: { seconds: number; cores: number }): string {
  return Number.isNaN(c.seconds) ? '—' : `${c.seconds.toFixed(1)} s (${c.cores.toFixed(2)} cores)`;
}

/**
 * Runs a command to its end through bash's `times`, so the CPU of the command (and its children) is known even though
 * Node does not report a child's rusage. Resolves with its exit status, stderr and user+system CPU seconds.
 */
export function runTimed(
  bin: string,
  args: string[],
  maxMs: number,
): Promise<{ status: number | null; stderr: string; cpu: number; wallMs: number }> {
  const t0 = performance.now();
  // `times` prints the shell's own and then its children's user/system times: "0m1.230s 0m0.450s".
  const child = spawn('bash', ['-c', '"$@"; s=$?; times >&2; exit $s', 'bench', bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const killer = setTimeout(() => child.kill('SIGKILL'), maxMs);
  return new Promise((resolve) =>
    child.once('exit', (status) => {
      clearTimeout(killer);
      const lines = stderr.trim().split('\n');
      const last = lines[lines.length - 1] ?? '';
      const secs = [...last.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      resolve({ status, stderr: lines.slice(0, -2).join('\n'), cpu: secs.length === 2 ? secs[0]! + secs[1]! : NaN, wallMs: performance.now() - t0 });
    }),
  );
}

/** The machine line every bench prints: cores, model and the load average while it ran. */
export function machineLine(): string {
  return `cpus: ${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`;
}
