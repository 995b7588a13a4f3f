// Owns building the console's HTML safely: a tagged template that escapes every interpolated value unless it is
// already markup, so no tenant-controlled text (subjects, addresses, headers) can become markup or script.
import { stamp } from './dates.js';
/** Markup that is already safe: built by `html` or `raw`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Escapes text for an element body or a double-quoted attribute value. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Trusted markup (constants of our own, never data). */
export const raw = (text: string) => new Html(text);

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return esc(v);
}

/** `html\`<p>${text}</p>\``: strings, numbers and arrays of them are escaped; Html passes; null/undefined/false vanish. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => (out += render(v) + (strings[i + 1] ?? '')));
  return new Html(out);
}

/** A console URL with its query: empty values are left out; values are percent-encoded. */
export function href(path: string, query: Record<string, string | number | undefined | null> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** `yyyy-mm-dd hh:mm UTC` (dates.ts: the one format every view shows), or '' for none. */
export function when(ms: number | null | undefined): string {
  return stamp(ms);
}

/** A table: header cells and rows of cells (each cell escaped unless Html). An empty body shows `empty`. */
export function table(head: readonly string[], rows: readonly (readonly Part[])[], empty = 'Nothing to show.'): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<table><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows.map(
    (r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`,
  )}</tbody></table>`;
}
