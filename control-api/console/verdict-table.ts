// Owns how the console shows a message's filtering verdicts (filters/inbound-verdicts.ts, the outbound scan): one
// table row per step — step, verdict, reason, score — with the step's other facts as labelled lines, never raw JSON.
import { html, table, type Html } from './html.js';

/** A scalar as text; an object's values joined (`{name, score}` → `NAME 3`); arrays by commas. */
function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(text).filter((s) => s !== '').join(', ');
  if (typeof v === 'object') return Object.values(v as Record<string, unknown>).map(text).filter((s) => s !== '').join(' ');
  return String(v);
}

/** `key: value` lines of a step's remaining facts; an object's members as `key member: value`. */
function detailLines(rest: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(rest)) {
    const label = k.replace(/_/g, ' ');
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [sub, sv] of Object.entries(v as Record<string, unknown>)) {
        const t = text(sv);
        if (t !== '') out.push([`${label} ${sub}`, t]);
      }
    } else {
      const t = text(v);
      if (t !== '') out.push([label, t]);
    }
  }
  return out;
}

/** The verdicts as a table (Step, Verdict, Reason, Score, Details), or `empty` when there are none. */
export function verdictTable(verdicts: readonly unknown[] | null | undefined, empty = 'No verdict recorded.'): Html {
  const rows = (verdicts ?? []).map((v) => {
    const { step, verdict, reason, score, ...rest } = (v !== null && typeof v === 'object' ? v : { verdict: v }) as Record<string, unknown>;
    const lines = detailLines(rest);
    return [
      text(step),
      html`<span class="verdict">${text(verdict)}</span>`,
      text(reason),
      typeof score === 'number' ? score : text(score),
      lines.length === 0 ? '' : html`<ul class="details">${lines.map(([k, t]) => html`<li><b>${k}</b>: ${t}</li>`)}</ul>`,
    ];
  });
  return table(['Step', 'Verdict', 'Reason', 'Score', 'Details'], rows, empty);
}
