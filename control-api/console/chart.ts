// Owns the console's charts: inline SVG drawn on the server (no script, no library), one line per series over time
// buckets, with axes and a legend. Colours come from presentation attributes, which the strict CSP allows.
import { html, type Html } from './html.js';

export interface Series {
  key: string;
  label: string;
  colour: string;
  values: readonly number[];
}

const W = 900;
const H = 260;
const PAD = { left: 48, right: 28, top: 12, bottom: 34 };

/** A round ceiling for the y axis (1, 2, 5 × 10^n), at least 1. */
function niceMax(v: number): number {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((x) => x >= v) as number;
}

/** A line chart of `series` over `labels` (one per bucket; a few are printed under the x axis). */
export function lineChart(title: string, labels: readonly string[], series: readonly Series[]): Html {
  const n = labels.length;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const x = (i: number) => PAD.left + (n <= 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (n - 1));
  const y = (v: number) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  const ticks = [...new Set([0, 0.2, 0.4, 0.6, 0.8, 1].map((f) => Math.round(f * max)))];
  const every = Math.max(1, Math.ceil(n / 8));
  return html`<figure class="chart"><figcaption>${title}</figcaption>
<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${title}" xmlns="http://www.w3.org/2000/svg">
${ticks.map((t) => html`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(t)}" y2="${y(t)}" stroke="#e3e7ef"/><text x="${PAD.left - 6}" y="${y(t) + 4}" text-anchor="end" font-size="11" fill="#5b6475">${t}</text>`)}
${labels.map((l, i) => (i % every === 0 ? html`<text x="${x(i)}" y="${H - 12}" text-anchor="${i === n - 1 ? 'end' : 'middle'}" font-size="11" fill="#5b6475">${l}</text>` : ''))}
${series.map(
  (s) => html`<polyline fill="none" stroke="${s.colour}" stroke-width="2" points="${s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"><title>${s.label}</title></polyline>
${s.values.map((v, i) => html`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5" fill="${s.colour}"><title>${s.label} ${labels[i]}: ${v}</title></circle>`)}`,
)}
</svg>
<div class="legend">${series.map((s) => html`<span><span class="swatch sw-${s.key}"></span>${s.label}</span>`)}</div></figure>`;
}
