// Owns "did you mean": the closest known name to a misspelt one (a configuration key, an environment variable, a CLI
// command or option), by edit distance; kept free of imports so the CLI's fast paths can load it.

/** Edit distance (insertions, deletions, substitutions) between two short strings. */
export function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length] as number;
}

/** The closest known name within a few edits (more for longer names), else undefined. */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 4)) + 1;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** ` (did you mean X?)` for the closest known name within a few edits, else ''. */
export function suggest(name: string, known: readonly string[]): string {
  const best = closest(name, known);
  return best === undefined ? '' : ` (did you mean ${best}?)`;
}
