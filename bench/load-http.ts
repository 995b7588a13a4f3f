// Owns the outbound bench's HTTP load generator: autocannon in its own process (so its CPU is its own), one JSON line out.
// Usage: node load-http.js '<json: url, headers, body, connections, amount, timeoutSecs>'
import autocannonModule from 'autocannon';

interface Options {
  url: string;
  headers: Record<string, string>;
  /** Request body, the same for every request (autocannon 8's idReplacement sends a wrong Content-Length). */
  body: string;
  connections: number;
  amount: number;
  timeoutSecs: number;
}

interface AutocannonResult {
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  start: Date;
  finish: Date;
  latency: Record<'p50' | 'p90' | 'p99' | 'max' | 'average', number>;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = autocannonModule as unknown as Autocannon;

const opts = JSON.parse(process.argv[2] ?? '{}') as Options;
const cpu0 = process.cpuUsage();
const r = await autocannon({
  url: opts.url,
  method: 'POST',
  headers: opts.headers,
  body: opts.body,
  connections: opts.connections,
  amount: opts.amount,
  timeout: opts.timeoutSecs,
});
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  JSON.stringify({
    ok: r['2xx'],
    failed: r.non2xx + r.errors + r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count])),
    wallMs: new Date(r.finish).getTime() - new Date(r.start).getTime(),
    latency: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  }) + '\n',
);
