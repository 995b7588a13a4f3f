// Owns what the console's managing forms share: showing a route's refusal on the form's own page (its status and
// its texts, as the API answers them) and reading form fields into a route's body without guessing at them.
import { ApiError } from '../errors.js';
import { html, type Html } from './html.js';
import type { ViewCtx, ViewResult } from './view.js';

/** The route's error texts above a form (nothing when there are none). */
export function errorBox(errors: readonly string[]): Html | '' {
  return errors.length === 0 ? '' : html`<div class="error" role="alert">${errors.map((e) => html`<p>${e}</p>`)}</div>`;
}

/**
 * Runs a form's route calls. A refusal (400, 403, 409, 503…) is shown on the page `show` renders, with the route's
 * own status and texts, so the operator corrects the form where it is. A 404 — another tenant's or a vanished object,
 * or a route the session's scope does not reach — stays the router's "Not found" page: nothing of it is shown.
 */
export async function refusedOnPage(
  c: ViewCtx,
  act: () => Promise<ViewResult>,
  show: (c: ViewCtx, errors: readonly string[]) => Promise<ViewResult>,
): Promise<ViewResult> {
  try {
    return await act();
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 404) throw err;
    const shown = await show(c, err.errors);
    return 'title' in shown ? { ...shown, status: err.status } : shown;
  }
}

/**
 * A number field for a route's integer: digits become the number; anything else is passed on as typed, so the
 * route's own schema refuses it in its words ("must be an integer from 1 to 65535"); blank takes `fallback`, the
 * default the form's label names (without one, blank goes to the route as typed and is refused there).
 */
export function intField(raw: string | null, fallback?: number): number | string {
  const v = (raw ?? '').trim();
  if (v === '') return fallback ?? v;
  return /^[0-9]{1,9}$/.test(v) ? Number(v) : v;
}

/** One entry per non-blank line (admins, aliases): the route checks each. */
export function lines(raw: string | null): string[] {
  return (raw ?? '').split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
}

/** The form of a POST view (the router has read it and checked its CSRF token). */
export function formOf(c: ViewCtx): URLSearchParams {
  return c.form ?? new URLSearchParams();
}
