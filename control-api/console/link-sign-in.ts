// Owns /console/link, where a sign-in link lands (a domain admin's login link, or the view link of a recipient's
// quarantine digest): GET shows what the link grants and changes nothing (mail scanners and link previews follow
// links); the POST of its button uses the link, once, and opens a console session held to the link's domain, or to
// its one recipient.
import type Koa from 'koa';
import { readDigestViewLink, type DigestViewClaim } from '../../mta/inbound/digest-links.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { html, type Html } from './html.js';
import { homePath, page } from './layout.js';
import { readLoginLink, usedLinkKey, USED_LINK_KEEP_MS, type LoginLinkClaim } from './login-link.js';
import { mintLoginToken, validLoginToken } from './login-token.js';
import { cookie, cookieNames, parseCookies, readForm, sameToken, viewerOf } from './session.js';

/** What the router lends: whether the request came over HTTPS (cookie names) and how a page is answered. */
export interface LinkPageDeps {
  secure: (ctx: Koa.Context) => boolean;
  render: (ctx: Koa.Context, status: number, doc: Html) => void;
}

const REFUSED = {
  invalid: 'This sign-in link is not valid.',
  expired: 'This sign-in link has expired. Ask for a new one.',
  used: 'This sign-in link was already used; each link signs in once. Ask for a new one.',
  form: 'The sign-in form expired. Open the link again.',
} as const;

/** A link's claim: a domain admin's (login link) or a recipient's (a digest's view link). */
type Claim = ({ kind: 'admin' } & LoginLinkClaim) | ({ kind: 'recipient'; domain: string } & DigestViewClaim);

function refusal(why: keyof typeof REFUSED): Html {
  return page('Sign-in link', html`<div class="login"><h1>Sluice console</h1><p class="error">${REFUSED[why]}</p></div>`);
}

/** The handler of /console/link (GET: the confirmation page; POST: sign in). */
export function createLinkSignIn(services: Services, deps: LinkPageDeps) {
  /** What a token grants, of either kind (each has its own secret and MAC context, so one never reads as the other). */
  function read(token: string | null | undefined): Claim | 'expired' | undefined {
    const admin = readLoginLink(services.loginLinks.secret, token, services.now());
    if (admin !== undefined) return admin === 'expired' ? admin : { kind: 'admin', ...admin };
    const view = readDigestViewLink(services.digestLinks.secret, token, services.now());
    if (view === undefined || view === 'expired') return view;
    return { kind: 'recipient', ...view, domain: view.address.slice(view.address.lastIndexOf('@') + 1) };
  }

  /** The claim of a token, or why it is refused (forged or malformed, expired, already used). */
  async function check(token: string): Promise<Claim | keyof typeof REFUSED> {
    const claim = read(token);
    if (claim === undefined) return 'invalid';
    if (claim === 'expired') return 'expired';
    const [uses] = await services.throttles.counts([usedLinkKey(claim.nonce)], services.now());
    return uses! > 0 ? 'used' : claim;
  }

  function refuse(ctx: Koa.Context, why: keyof typeof REFUSED, claim?: Claim): void {
    // Who and which domain only when the MAC held (a forged token's fields are nobody's); never the token itself.
    const recipient = claim?.kind === 'recipient' ? claim.address : undefined;
    services.logger.info({ component: 'console', reason: why, accountId: claim?.accountId, domain: claim?.domain, recipient }, 'sign-in link refused');
    deps.render(ctx, 403, refusal(why));
  }

  return async function linkSignIn(ctx: Koa.Context): Promise<void> {
    ctx.state.routeTemplate = '/console/link';
    const secure = deps.secure(ctx);
    const names = cookieNames(secure);
    if (ctx.method === 'GET') {
      const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
      const claim = await check(token);
      if (typeof claim === 'string') return refuse(ctx, claim);
      // The button's form is double-submitted like the sign-in form (login-token.ts): no other site can sign a
      // browser in to a session of its choosing with a link of its own (login CSRF).
      const csrf = mintLoginToken(services.consoleSecret, services.now());
      ctx.append('Set-Cookie', cookie(names.login, csrf, { secure, maxAgeSeconds: 3600 }));
      const grants = claim.kind === 'admin'
        ? html`Sign in as the administrator of <strong>${claim.domain}</strong>: its quarantine, lists and recipients.`
        : html`Sign in as <strong>${claim.address}</strong>: the mail held for you, and your safelist and blocklist.`;
      return deps.render(
        ctx,
        200,
        page(
          'Sign in',
          html`<div class="login"><h1>Sluice console</h1><p>${grants}</p>
<form method="post" action="/console/link"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="token" value="${token}">
<button>Sign in</button></form><p class="empty">The link works once.</p></div>`,
        ),
      );
    }
    if (ctx.method !== 'POST') throw new ApiError(405, ['method not allowed'], { Allow: 'GET, POST' });
    const form = await readForm(ctx.req);
    const login = parseCookies(ctx.headers.cookie)[names.login] ?? '';
    if (!sameToken(form.get('_csrf'), login) || !validLoginToken(services.consoleSecret, login, services.now())) return refuse(ctx, 'form');
    const claim = read(form.get('token'));
    if (claim === undefined || claim === 'expired') return refuse(ctx, claim ?? 'invalid');
    // Single use across processes and nodes: the store's atomic counter, counted before any session is opened, so of
    // two uses at once exactly one sees 1. The record is kept at least as long as the link lives (a digest's view
    // link lives a week), so it never lapses while the link could be used again.
    const keep = Math.max(USED_LINK_KEEP_MS, claim.expiresAt - services.now());
    const [uses] = await services.throttles.hit([usedLinkKey(claim.nonce)], services.now(), keep);
    if (uses! > 1) return refuse(ctx, 'used', claim);
    const ttlMs = services.config.http.consoleSessionHours * 3_600_000;
    const session = await services.console.openSession({
      kind: 'tenant', accountId: claim.accountId, domain: claim.domain, now: services.now(), ttlMs,
      ...(claim.kind === 'admin' ? { keyId: claim.keyId } : { recipient: claim.address }),
    });
    // The session holds only while the domain is still the account's (and, for an admin, the key lives and the
    // domain is bound to no other key).
    const viewer = await viewerOf(services, session.id);
    if (!viewer) {
      await services.console.closeSession(session.id);
      return refuse(ctx, 'invalid', claim);
    }
    services.logger.info({ component: 'console', accountId: claim.accountId, domain: claim.domain, recipient: viewer.recipient }, 'sign-in link used');
    ctx.append('Set-Cookie', cookie(names.session, session.id, { secure, maxAgeSeconds: ttlMs / 1000 }));
    ctx.append('Set-Cookie', cookie(names.login, '', { secure, maxAgeSeconds: 0 }));
    ctx.redirect(homePath(viewer));
  };
}
