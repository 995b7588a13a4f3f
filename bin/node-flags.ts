// Owns the V8 flags `sluice serve` runs with (package.json's start, the binary's first line, the systemd unit, the
// benches) and the warning a server started without them logs.

/**
 * V8's young generation capped at 2 MB per semi-space. A message passes through the server as a stream of short-lived
 * 16–64 KiB buffers (DATA, the verifiers, the spool, delivery); their memory is given back when the young generation
 * is collected, so its size is how much dead message data can sit in RSS at once. With V8's default (up to 32 MB per
 * semi-space on a large machine) a 28 MB message raised peak RSS by 2–3.5× its size; with 2 MB by 0.6× (bench:memory,
 * issue 25). Idle RSS falls too (142 → 119 MB).
 */
export const SERVE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];

/**
 * The flags of SERVE_NODE_FLAGS this process was started without (on the command line or in NODE_OPTIONS), by name:
 * any value an operator chose counts as present.
 */
export function missingNodeFlags(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string[] {
  // V8 reads `--max_semi_space_size` and `--max-semi-space-size` alike.
  const name = (a: string) => (a.split('=')[0] ?? '').replaceAll('_', '-');
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map(name));
  return SERVE_NODE_FLAGS.filter((f) => !given.has(name(f)));
}
