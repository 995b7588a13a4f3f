// Owns reading how many write transactions (group commits, each one fsync) a running `sluice serve` has made, from its
// /metrics, so the benches print commits per message (issue 32).
const COUNT = /^sluice_sqlite_commit_duration_seconds_count(?:\{[^}]*\})? (\d+(?:\.\d+)?(?:e\+?\d+)?)$/gm;

/**
 * The store commits so far of the server whose metrics listener is `metrics` (host:port): the count of the
 * `sluice_sqlite_commit_duration_seconds` histogram, one per group-commit write transaction (summed over its series,
 * should the server label them per process).
 */
export async function storeCommits(metrics: string): Promise<number> {
  const res = await fetch(`http://${metrics}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const counts = [...(await res.text()).matchAll(COUNT)].map((m) => Number(m[1]));
  if (counts.length === 0) throw new Error('no sluice_sqlite_commit_duration_seconds_count in /metrics');
  return counts.reduce((a, b) => a + b, 0);
}
