// Owns the V8 flags `sluice serve` runs with (package.json's start, the binary's first line, the systemd unit, the
// benches) and the warning a server started without them logs.

/**
 * V8's young generation capped at 8 MB per semi-space. A message passes through the server as a stream of short-lived
 * 16–64 KiB buffers (DATA, the verifiers, the spool, delivery); their memory is given back when the young generation
 * is collected, so its size bounds how much dead message data sits in RSS at once. Measured with bench:memory (28 MB
 * message, peak RSS growth ÷ message) and bench:outbound (alternating, one run): V8's default here (up to 32 MB per
 * semi-space) gave MX 3.23–3.47×, submission 2.02–2.57×; 8 MB gave MX 1.28–1.79×, submission 0.84–1.72×, idle RSS
 * 142 → 129 MB, and the same outbound acceptance (236/203 req/s vs 236/177 without); 2 MB gave 0.55–0.74× but held
 * outbound acceptance at 203–204 req/s in 6 runs of 6 (more scavenges on the REST path).
 *
 * `--expose-gc` gives the buffer governor (bin/buffer-governor.ts) its `gc`: young-generation collections are driven
 * by JS objects, not by the bytes behind Buffers, so dead message buffers still piled up to V8's 64 MB external limit
 * (PostgreSQL's MX path 3.3–4.1× before it, 2.1–2.3× with it).
 */
export const SERVE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--expose-gc'];

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
