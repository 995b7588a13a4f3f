// Owns the headers every HTML answer of the HTTP listener carries, whichever part wrote it (the unsubscribe pages,
// the console, Koa's redirect bodies, anything added later): a Content-Security-Policy with frame-ancestors 'none'.
import type Koa from 'koa';

/**
 * The policy of an HTML answer that sets none of its own (the console sets a stricter one with its assets): nothing
 * loads, forms post only to us, and no other site may frame the page (CSP Level 2 frame-ancestors: clickjacking of
 * the unsubscribe button). X-Frame-Options says the same to browsers without CSP.
 */
export const HTML_CSP = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * Middleware (mounted first, so it sees the final answer, error pages included): sets HTML_CSP on a text/html answer
 * without a Content-Security-Policy, and on every text/html answer X-Frame-Options DENY, nosniff and no-referrer
 * (an unsubscribe link carries its token in the URL).
 */
export function htmlSecurityHeaders(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (!ctx.response.is('html')) return;
    if (!ctx.response.get('Content-Security-Policy')) ctx.set('Content-Security-Policy', HTML_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (!ctx.response.get('Referrer-Policy')) ctx.set('Referrer-Policy', 'no-referrer');
  };
}
