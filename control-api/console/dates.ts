// Owns how the console writes a date or a time: one format for every view, yyyy-mm-dd (ISO 8601's calendar date, the
// one no reader misreads as day-first or month-first) and `yyyy-mm-dd hh:mm UTC` where the time of day matters.

/** A moment as the API gives it: ms since the epoch, an ISO 8601 string, or none. */
export type Moment = number | string | null | undefined;

function toDate(m: Moment): Date | undefined {
  if (m === null || m === undefined || m === '') return undefined;
  const d = new Date(typeof m === 'number' ? m : Date.parse(m));
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** `2026-12-02`: the UTC calendar date, or '' for none (or a string that is not a date). */
export function day(m: Moment): string {
  return toDate(m)?.toISOString().slice(0, 10) ?? '';
}

/** `2026-12-02 18:25 UTC`: the UTC date and time to the minute, or '' for none. */
export function stamp(m: Moment): string {
  const d = toDate(m);
  return d ? `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)} UTC` : '';
}

/**
 * A span in words, to the largest two units (`3 d 4 h`, `12 min`, `40 s`): how old a queued message is, how long
 * until a certificate expires. Negative spans read as their size (the caller says "ago" or "expired").
 */
export function span(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  const units: [number, string][] = [[86_400, 'd'], [3_600, 'h'], [60, 'min'], [1, 's']];
  const parts: string[] = [];
  let rest = s;
  for (const [size, name] of units) {
    const n = Math.floor(rest / size);
    if (n > 0 || (parts.length === 0 && size === 1)) parts.push(`${n} ${name}`);
    rest -= n * size;
    if (parts.length === 2) break;
    // Two adjacent units only: "3 d 4 h", never "3 d 12 s".
    if (parts.length === 1 && n === 0) break;
  }
  return parts.join(' ');
}
