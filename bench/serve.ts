// Owns starting `sluice serve` for a bench: spawn (with an optional CPU profile), wait for the listening line, run
// the CLI against the same data_dir, and provision example.test as an inbound domain relayed to a sink.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { SERVE_NODE_FLAGS } from '../bin/node-flags.js';

export const BIN = path.resolve(import.meta.dirname, '../bin/sluice.js');

/**
 * Spawns `sluice serve` with `env`; resolves with the child and the fields of its `listening` log line (http, mx, …).
 * Node runs with SERVE_NODE_FLAGS (bin/node-flags.ts). BENCH_PROFILE=<dir> writes a V8 CPU profile of the server there (open it in Chrome DevTools), unless `profile: false`.
 */
export async function spawnServe(env: NodeJS.ProcessEnv, o: { profile?: boolean } = {}): Promise<{ child: ChildProcess; info: Record<string, string> }> {
  const prof = process.env.BENCH_PROFILE && o.profile !== false ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // The metrics listener on a port of its own choosing: the default 127.0.0.1:9464 is taken by whatever else runs
  // sluice on this machine (another bench, a test, a service), and the bench would refuse to start.
  // As operators run it (npm start, the systemd unit); BENCH_SERVE_NODE_FLAGS (space-separated, may be empty) replaces
  // them to measure what they change.
  const flags = process.env.BENCH_SERVE_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? SERVE_NODE_FLAGS;
  // BENCH_PROCESSES sets server.processes for A/B runs; unset, the server's own default (config/keys-server.ts).
  const processes = process.env.BENCH_PROCESSES ?? env.SLUICE_SERVER_PROCESSES;
  const child = spawn(process.execPath, [...flags, ...prof, BIN, 'serve'], {
    env: { SLUICE_HTTP_METRICS_LISTEN: '127.0.0.1:0', ...env, ...(processes ? { SLUICE_SERVER_PROCESSES: processes } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = await new Promise<Record<string, string>>((resolve, reject) => {
    // Several processes: every child serves once the primary says so; the ports are those of any `listening` line.
    let listening: Record<string, string> | undefined;
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"msg":"listening"')) listening ??= JSON.parse(line);
      if (listening && (Number(processes ?? 1) <= 1 || line.includes('"msg":"serving children started"'))) resolve(listening);
    });
    child.once('exit', (code) => reject(new Error(`sluice exited with ${code}`)));
  });
  return { child, info };
}

/** Runs `sluice <args> --json` against the server's data_dir (the same env) and parses what it prints. */
export function cliJson(env: NodeJS.ProcessEnv, ...args: string[]): Record<string, unknown> {
  return JSON.parse(execFileSync(process.execPath, [BIN, ...args, '--json'], { env }).toString());
}

/** Provisions example.test for the `default` account (abuse policy flag) with one downstream: the sink. */
export async function provisionExampleTest(env: NodeJS.ProcessEnv, http: string, sinkPort: number): Promise<void> {
  const key = cliJson(env, 'keys', 'create', '--account', 'default', '--scope', 'inbound').key as string;
  const res = await fetch(`http://${http}/inbound/v1/domains`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      domain: 'example.test',
      subscriptionHandle: 'default',
      settings: { abusePolicy: 'flag' },
      downstreamAddresses: [{ priority: 10, weight: 1, port: sinkPort, target: '127.0.0.1' }],
    }),
  });
  if (res.status !== 201) throw new Error(`provisioning example.test failed: ${res.status} ${await res.text()}`);
}
