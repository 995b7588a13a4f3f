// Owns the /console HTTP surface: security headers (strict CSP), assets, sign-in (a key or token; a login link in
// link-sign-in.ts; a quarantine digest's link acts without one in digest-page.ts) and sign-out, the session and
// CSRF checks every request passes, the account a request is about, and dispatch to the views.
import type Koa from 'koa';
import type { AccountRow } from '../../storage/ports/accounts.js';
import { ApiError, forbidden, notFound } from '../errors.js';
import { clientNetwork } from '../../mta/smtp/auth-throttle.js';
import type { AnyRoute } from '../route.js';
import { visibleAccounts } from '../routes/outbound-search.js';
import type { Services } from '../services.js';
import { ASSETS } from './assets.js';
import { appendAudit, audited, targetOf } from '../audit-middleware.js';
import { createRouteCaller, type ConsoleActor } from './call-route.js';
import { html, type Html } from './html.js';
import { ALL_ACCOUNTS, homePath, mayView, NAV, page } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';
import { CONSOLE_VIEWS } from './views.js';
import { createLinkSignIn } from './link-sign-in.js';
import { createDigestPage } from './digest-page.js';
import { mintLoginToken, validLoginToken } from './login-token.js';
import { SIGN_IN_REFUSED } from './totp.js';
import { cookie, cookieNames, parseCookies, readForm, sameToken, signIn, viewerOf, type Viewer } from './session.js';

// 'self' only: no inline script or style, no CDN; inline SVG needs no source. Forms post to ourselves only.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function compile(path: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const re = new RegExp(`^${path.replace(/\{([a-z_]+)\}/g, (_, n: string) => (names.push(n), '([^/]+)'))}$`);
  return { re, names };
}

function loginPage(csrf: string, error?: string): Html {
  return page(
    'Sign in',
    html`<div class="login"><h1>Sluice console</h1>${error ? html`<p class="error">${error}</p>` : ''}
<form method="post" action="/console/login"><input type="hidden" name="_csrf" value="${csrf}">
<label>API key (scope api or inbound) or operator token<input type="password" name="secret" autocomplete="off" required autofocus></label>
<label>Authenticator code (when enrolled)<input type="text" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code"></label>
<button>Sign in</button></form>
<p class="empty">Operators: create a token with <code>sluice console token</code>.</p></div>`,
  );
}

/** A path segment %xx-decoded; one that is not valid percent-encoding (`%zz`) names no page: 404, not a throw. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw notFound('no such page');
  }
}

/**
 * Failed sign-ins a client network may make before it is refused (429) until LOGIN_WINDOW_MS pass without one. A key
 * is 192 random bits, so the bound is not what makes guessing hopeless; it keeps a guesser from costing every node a
 * key lookup per request, and holds across nodes because the counter is in the store.
 */
export const LOGIN_FAILURES = 10;
/** The window of LOGIN_FAILURES: a network's count lapses this long after its last failure. */
export const LOGIN_WINDOW_MS = 60_000;

/** The console middleware: owns every path under /console and passes anything else on. */
export function createConsole(services: Services, routes: readonly AnyRoute[], views: readonly ViewRoute[] = CONSOLE_VIEWS): Koa.Middleware {
  const call = createRouteCaller(services, routes);
  const table = views.map((v) => ({ ...v, ...compile(v.path) }));
  const secure = (ctx: Koa.Context) => ctx.secure || (services.config.http.publicUrl ?? '').startsWith('https:');

  function render(ctx: Koa.Context, status: number, doc: Html): void {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = doc.text;
  }
  const linkSignIn = createLinkSignIn(services, { secure, render });
  const digestPage = createDigestPage(services, { secure, render });

  async function login(ctx: Koa.Context): Promise<void> {
    ctx.state.routeTemplate = '/console/login';
    const names = cookieNames(secure(ctx));
    const fresh = () => {
      const csrf = mintLoginToken(services.consoleSecret, services.now());
      ctx.append('Set-Cookie', cookie(names.login, csrf, { secure: secure(ctx), maxAgeSeconds: 3600 }));
      return csrf;
    };
    if (ctx.method === 'GET') return render(ctx, 200, loginPage(fresh()));
    if (ctx.method !== 'POST') throw new ApiError(405, ['method not allowed'], { Allow: 'GET, POST' });
    // Failed sign-ins per client network (an IPv4 address, an IPv6 /64), counted in the store so every node of the
    // balancer counts together: past LOGIN_FAILURES the network waits until a window passes without a failure.
    const failures = `console-login:${clientNetwork(ctx.ip)}`;
    const [failed] = await services.throttles.counts([failures], services.now());
    if (failed! >= LOGIN_FAILURES) {
      throw new ApiError(429, ['too many failed sign-ins; wait a minute'], { 'Retry-After': String(LOGIN_WINDOW_MS / 1000) });
    }
    const form = await readForm(ctx.req);
    // Double submit (the field equals the cookie, which another site cannot read) of a token this server minted
    // within the hour: a pair made up and planted by whoever can set a cookie for the host does not verify.
    const token = parseCookies(ctx.headers.cookie)[names.login] ?? '';
    if (!sameToken(form.get('_csrf'), token) || !validLoginToken(services.consoleSecret, token, services.now())) {
      return render(ctx, 403, loginPage(fresh(), 'The sign-in form expired; try again.'));
    }
    let session;
    try {
      session = await signIn(services, (form.get('secret') ?? '').trim(), (form.get('code') ?? '').replace(/\s/g, ''));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      await services.throttles.hit([failures], services.now(), LOGIN_WINDOW_MS);
      // A wrong or replayed authenticator code counts as a failure too (TOTP alone is a million guesses).
      return render(ctx, err.status, loginPage(fresh(), err.errors[0] === SIGN_IN_REFUSED ? 'Unknown or revoked key or token, or a wrong or used code.' : `${err.errors[0] ?? 'Refused'}.`));
    }
    ctx.append('Set-Cookie', cookie(names.session, session.id, { secure: secure(ctx), maxAgeSeconds: services.config.http.consoleSessionHours * 3600 }));
    ctx.append('Set-Cookie', cookie(names.login, '', { secure: secure(ctx), maxAgeSeconds: 0 }));
    const viewer = await viewerOf(services, session.id);
    ctx.redirect(viewer ? homePath(viewer) : '/console/login');
  }

  /** The account the request names (`?account=`), checked against what the viewer may see: 404 otherwise. */
  function selectAccount(viewer: Viewer, nav: string, wanted: string | undefined): AccountRow | null {
    const allowAll = viewer.kind === 'operator' && NAV.find((n) => n.key === nav)?.allAccounts === true;
    if (wanted === ALL_ACCOUNTS) {
      if (allowAll) return null;
      throw notFound('pick one account for this view');
    }
    if (wanted === undefined || wanted === '') {
      if (viewer.home) return viewer.home;
      if (allowAll) return null;
      const first = viewer.accounts[0];
      if (!first) throw notFound('there are no accounts yet');
      return first;
    }
    const found = viewer.accounts.find((a) => a.handle === wanted);
    if (!found) throw notFound(`account "${wanted}" not found`);
    return found;
  }

  async function dispatch(ctx: Koa.Context, viewer: Viewer): Promise<void> {
    const match = table
      .map((v) => ({ v, m: v.re.exec(ctx.path) }))
      .find((x) => x.m && x.v.method === ctx.method);
    if (!match || !match.m) {
      ctx.state.routeTemplate = '/console/*';
      throw table.some((v) => v.re.test(ctx.path)) ? new ApiError(405, ['method not allowed']) : notFound('no such page');
    }
    const { v, m } = match;
    ctx.state.routeTemplate = v.path;
    // A view of another scope than the session's key is not there for it (404, as an unknown page; REST says 403).
    if (!mayView(viewer, v.nav)) throw notFound('no such page');
    const params = Object.fromEntries(v.names.map((n, i) => [n, decodeSegment(m[i + 1]!)]));
    let form: URLSearchParams | undefined;
    if (ctx.method === 'POST') {
      form = await readForm(ctx.req);
      // Every state change carries the session's CSRF token; without it nothing happens (403).
      if (!sameToken(form.get('_csrf'), viewer.session.csrf)) throw forbidden('missing or invalid CSRF token; reload the page');
    }
    const query = Object.fromEntries(Object.entries(ctx.query).map(([k, val]) => [k, Array.isArray(val) ? (val.at(-1) ?? '') : (val ?? '')]));
    const account = selectAccount(viewer, v.nav, query.account);
    // The console's changes go to the audit log as the signed-in operator's or tenant's (call-route.ts).
    const s = viewer.session;
    const by: ConsoleActor =
      viewer.kind === 'operator'
        ? { actorKind: 'operator', actor: `token ${s.token_id ?? '?'}`, keyId: null, address: ctx.ip }
        : { actorKind: 'key', actor: viewer.recipient !== undefined ? `recipient ${viewer.recipient}` : `${s.key_id ?? '-'}${viewer.domain !== undefined ? ` (admin of ${viewer.domain})` : ''}`, keyId: s.key_id, address: ctx.ip };
    // Routes the view called that the audit log records (call-route.ts); a form that changed something without one
    // (a store action with no REST route) is recorded here, under its own console path, once it is answered.
    let changes = 0;
    const record = (status: number) =>
      appendAudit(services.audit, services.logger, {
        at: services.now(), via: 'console', actorKind: by.actorKind, actor: by.actor, accountId: account?.id ?? null, keyId: by.keyId,
        action: `POST ${v.path}`, target: targetOf(params), address: ctx.ip, status,
      });
    const c: ViewCtx = {
      services,
      call: (method, path, as, given) => {
        if (audited(method, path)) changes++;
        return call(method, path, as, given, by);
      },
      viewer,
      account,
      query,
      params,
      form,
      csrf: viewer.session.csrf,
      as() {
        if (!account) throw notFound('pick one account for this view');
        const keyId = viewer.kind === 'tenant' && account.id === viewer.home?.id ? (viewer.session.key_id ?? 0) : 0;
        return { account, keyId, scopes: viewer.scopes, domain: viewer.domain, recipient: viewer.recipient };
      },
      async scope() {
        if (!account) return null;
        return visibleAccounts(services, { account, keyId: 0, scope: 'api' });
      },
    };
    let out: Awaited<ReturnType<typeof v.view>>;
    try {
      out = await v.view(c);
    } catch (err) {
      if (ctx.method === 'POST' && changes === 0) await record(err instanceof ApiError ? err.status : 500);
      throw err;
    }
    if (ctx.method === 'POST' && changes === 0) await record('redirect' in out ? 302 : 'status' in out ? (out.status ?? 200) : 200);
    if ('redirect' in out) return ctx.redirect(out.redirect);
    if ('download' in out) {
      // RFC 6266: an attachment; the name is ours ([a-z0-9.-] only), so it needs no quoting beyond the quotes.
      ctx.set('Content-Disposition', `attachment; filename="${out.download.filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`);
      ctx.type = out.download.type;
      ctx.body = out.download.body;
      return;
    }
    render(ctx, out.status ?? 200, page(out.title, out.body, { viewer, account, csrf: viewer.session.csrf, active: v.nav }));
  }

  return async (ctx, next) => {
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) return next();
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-store');
    const asset = ctx.path.startsWith('/console/assets/') ? ASSETS[ctx.path.slice('/console/assets/'.length)] : undefined;
    if (asset && ctx.method === 'GET') {
      ctx.state.routeTemplate = '/console/assets/{name}';
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('ETag', asset.etag);
      ctx.type = asset.type;
      ctx.body = asset.body;
      return;
    }
    let viewer: Viewer | undefined;
    try {
      if (ctx.path === '/console/login') return await login(ctx);
      if (ctx.path === '/console/link') return await linkSignIn(ctx);
      if (ctx.path === '/console/digest') return await digestPage(ctx);
      const sessionId = parseCookies(ctx.headers.cookie)[cookieNames(secure(ctx)).session];
      viewer = await viewerOf(services, sessionId);
      if (!viewer) {
        ctx.state.routeTemplate = '/console/*';
        if (ctx.method === 'GET') return ctx.redirect('/console/login');
        throw forbidden('not signed in');
      }
      if (ctx.path === '/console' || ctx.path === '/console/') {
        ctx.state.routeTemplate = '/console';
        return ctx.redirect(homePath(viewer));
      }
      if (ctx.path === '/console/logout' && ctx.method === 'POST') {
        ctx.state.routeTemplate = '/console/logout';
        const form = await readForm(ctx.req);
        if (!sameToken(form.get('_csrf'), viewer.session.csrf)) throw forbidden('missing or invalid CSRF token; reload the page');
        await services.console.closeSession(sessionId as string);
        ctx.append('Set-Cookie', cookie(cookieNames(secure(ctx)).session, '', { secure: secure(ctx), maxAgeSeconds: 0 }));
        return ctx.redirect('/console/login');
      }
      await dispatch(ctx, viewer);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      for (const [k, val] of Object.entries(err.headers)) ctx.set(k, val);
      const body = html`<h1>${err.status === 404 ? 'Not found' : err.status === 403 ? 'Forbidden' : 'Cannot do that'}</h1>${err.errors.map((e) => html`<p class="error">${e}</p>`)}<p><a href="${viewer ? homePath(viewer) : '/console/login'}">Back to the console</a></p>`;
      render(ctx, err.status, viewer ? page('Error', body, { viewer, account: viewer.home ?? null, csrf: viewer.session.csrf, active: '' }) : page('Error', body));
    }
  };
}
