// Owns mustache rendering of send-request content and subjects: own properties of the data only, no partials.
import Mustache from 'mustache';

const hasOwn = (obj: unknown, key: string): obj is Record<string, unknown> =>
  obj !== null && typeof obj === 'object' && Object.prototype.hasOwnProperty.call(obj, key);

/**
 * A mustache context that sees only the data's own properties. The stock lookup uses `in`, so `{{constructor}}` or
 * `{{#a.constructor.constructor}}` would reach Object.prototype and the Function constructor and call them.
 */
class OwnPropertyContext extends Mustache.Context {
  override push(view: unknown): Mustache.Context {
    return new OwnPropertyContext(view, this);
  }

  override lookup(name: string): unknown {
    if (name === '.') return this.view;
    const [first, ...rest] = name.split('.') as [string, ...string[]];
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the walk up the context chain starts here
    for (let ctx: Mustache.Context | undefined = this; ctx; ctx = ctx.parent) {
      if (!hasOwn(ctx.view, first)) continue;
      let value: unknown = ctx.view[first];
      for (const key of rest) value = hasOwn(value, key) ? value[key] : undefined;
      return value;
    }
    return undefined;
  }
}

/**
 * Renders a mustache template against JSON data (own properties only; no partials). `html` selects mustache's HTML
 * escaping of `{{x}}`; otherwise values are inserted as they are (text/plain and the subject: escaping there would
 * show `&amp;` to the reader). Throws on a malformed template. One `Writer` reused across renders caches the parse.
 */
export function renderTemplate(writer: Mustache.Writer, template: string, data: unknown, html: boolean): string {
  const escape = html ? Mustache.escape : (v: unknown) => String(v);
  return writer.renderTokens(writer.parse(template), new OwnPropertyContext(data), undefined, template, { escape });
}
