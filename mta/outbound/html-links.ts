// Owns rewriting an HTML part for tracking: <a href> targets to tracking URLs, and the open pixel before </body>.

/** One attribute of a start tag, with the span of its value in the document. */
interface Attr {
  name: string;
  /** The raw (still entity-encoded) value. */
  value: string;
  /** Span of the value in the document: inside the quotes, or the unquoted run. */
  start: number;
  end: number;
  quoted: boolean;
}

interface Tag {
  name: string;
  end: boolean;
  start: number;
  attrs: Attr[];
}

// HTML Living Standard §13.1.2: raw text and escapable raw text elements, whose content holds no tags.
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes']);
const SPACE = /[\t\n\f\r ]/;

/** Reads the attributes of a tag from `i` (after its name) to its '>'; returns them and the index after '>'. */
function readAttrs(html: string, i: number): { attrs: Attr[]; next: number } | undefined {
  const attrs: Attr[] = [];
  const n = html.length;
  for (;;) {
    while (i < n && (SPACE.test(html[i] as string) || html[i] === '/')) i++;
    if (i >= n) return undefined; // §13.2.5.33: EOF in a tag drops the tag
    if (html[i] === '>') return { attrs, next: i + 1 };
    const nameStart = i;
    i++; // §13.2.5.32: the first character of a name may be '='
    while (i < n && !SPACE.test(html[i] as string) && !'/>='.includes(html[i] as string)) i++;
    const name = html.slice(nameStart, i).toLowerCase();
    let j = i;
    while (j < n && SPACE.test(html[j] as string)) j++;
    if (html[j] !== '=') {
      attrs.push({ name, value: '', start: i, end: i, quoted: false });
      continue;
    }
    j++;
    while (j < n && SPACE.test(html[j] as string)) j++;
    const q = html[j];
    if (q === '"' || q === "'") {
      const close = html.indexOf(q, j + 1);
      if (close < 0) return undefined;
      attrs.push({ name, value: html.slice(j + 1, close), start: j + 1, end: close, quoted: true });
      i = close + 1;
    } else {
      let k = j;
      while (k < n && !SPACE.test(html[k] as string) && html[k] !== '>') k++;
      attrs.push({ name, value: html.slice(j, k), start: j, end: k, quoted: false });
      i = k;
    }
  }
}

/** The tags of a document in order, skipping comments, doctypes and the content of raw text elements. */
function tags(html: string): Tag[] {
  const out: Tag[] = [];
  const n = html.length;
  let i = 0;
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4);
      i = close < 0 ? n : close + 3;
      continue;
    }
    const c = html[lt + 1] ?? '';
    if (c === '!' || c === '?') {
      const close = html.indexOf('>', lt + 2);
      i = close < 0 ? n : close + 1;
      continue;
    }
    const end = c === '/';
    const nameAt = end ? lt + 2 : lt + 1;
    if (!/[A-Za-z]/.test(html[nameAt] ?? '')) {
      // '</' + non-letter is a bogus comment up to '>'; '<' + non-letter is text.
      i = end ? (html.indexOf('>', lt) < 0 ? n : html.indexOf('>', lt) + 1) : lt + 1;
      continue;
    }
    let k = nameAt;
    while (k < n && !SPACE.test(html[k] as string) && html[k] !== '/' && html[k] !== '>') k++;
    const name = html.slice(nameAt, k).toLowerCase();
    const read = readAttrs(html, k);
    if (!read) break;
    out.push({ name, end, start: lt, attrs: read.attrs });
    i = read.next;
    if (!end && RAW_TEXT.has(name)) {
      const close = new RegExp(`</${name}[\\t\\n\\f\\r />]`, 'i').exec(html.slice(i));
      i = close ? i + close.index : n;
    }
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the character references an attribute value may hold in a URL (numeric, and the five XML names). */
function decodeAttr(value: string): string {
  return value.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|amp|lt|gt|quot|apos);/g, (m, ref: string) => {
    if (ref[0] !== '#') return ENTITIES[ref] ?? m;
    const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
  });
}

/**
 * The target of an href worth tracking, normalised as a browser would follow it, or undefined: only a non-empty
 * absolute http or https URL (api.md §2.1: "<a> links with non-empty http/https URL"). mailto:, tel:, fragments,
 * relative and template-looking URLs are left alone.
 */
export function trackableUrl(rawHref: string): string | undefined {
  // HTML: a URL attribute is stripped of leading and trailing ASCII white space before parsing.
  const href = decodeAttr(rawHref).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '');
  if (!/^https?:\/\//i.test(href)) return undefined;
  try {
    const url = new URL(href);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return undefined;
    return url.href;
  } catch {
    return undefined;
  }
}

export interface HtmlTrackingOptions {
  /** Click tracking: the tracking URL of link `index`; `skip` leaves a target alone (the unsubscribe link). */
  click?: { url: (index: number) => string; skip?: (target: string) => boolean; maxLinks: number };
  /** Open tracking: the pixel's URL. */
  pixel?: string;
}

export interface HtmlTrackingResult {
  html: string;
  /** The distinct targets rewritten, in link-index order. */
  links: string[];
  /** True when the pixel was added. */
  pixel: boolean;
}

/**
 * Rewrites `html` for tracking. Every `<a>` start tag with a trackable href (see trackableUrl) and no
 * `clicktracking="off"` gets the tracking URL of its target in place of the href; one index per distinct target,
 * up to `maxLinks` (further targets are left as they are). The 1×1 pixel goes before the last `</body>` (else
 * `</html>`, else at the end). Comments, doctypes and the content of script, style and other raw text elements
 * are never touched. Everything else of the document stays byte for byte.
 */
export function rewriteHtml(html: string, opts: HtmlTrackingOptions): HtmlTrackingResult {
  const edits: { start: number; end: number; text: string }[] = [];
  const index = new Map<string, number>();
  let bodyEnd: number | undefined;
  let htmlEnd: number | undefined;
  for (const tag of tags(html)) {
    if (tag.end) {
      if (tag.name === 'body') bodyEnd = tag.start;
      if (tag.name === 'html') htmlEnd = tag.start;
      continue;
    }
    if (tag.name !== 'a' || !opts.click) continue;
    const first = (name: string) => tag.attrs.find((a) => a.name === name); // §13.2.5.33: a repeated attribute is ignored
    const href = first('href');
    if (!href) continue;
    if (decodeAttr(first('clicktracking')?.value ?? '').trim().toLowerCase() === 'off') continue;
    const target = trackableUrl(href.value);
    if (target === undefined || opts.click.skip?.(target)) continue;
    let i = index.get(target);
    if (i === undefined) {
      if (index.size >= opts.click.maxLinks) continue;
      i = index.size;
      index.set(target, i);
    }
    const url = opts.click.url(i);
    edits.push(href.quoted ? { start: href.start, end: href.end, text: url } : { start: href.start, end: href.end, text: `"${url}"` });
  }
  let pixel = false;
  if (opts.pixel !== undefined) {
    const at = bodyEnd ?? htmlEnd ?? html.length;
    const img = `<img src="${opts.pixel}" width="1" height="1" alt="" border="0" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">`;
    edits.push({ start: at, end: at, text: img });
    pixel = true;
  }
  edits.sort((a, b) => a.start - b.start);
  let out = '';
  let pos = 0;
  for (const e of edits) {
    out += html.slice(pos, e.start) + e.text;
    pos = e.end;
  }
  out += html.slice(pos);
  return { html: out, links: [...index.keys()], pixel };
}
