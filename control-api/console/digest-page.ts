// Owns /console/digest, where a quarantine digest's link lands (issue 37): GET shows the message and what the link
// will do, changing nothing (mail scanners and link previews follow links); the POST of its button does it, once,
// without a sign-in: the signed link is the credential, for its one address and message.
import type Koa from 'koa';
import { digestMessage, heldBecause, isVirus, runDigestAction, type DigestActionDeps, type DigestOutcome } from '../../mta/inbound/digest-actions.js';
import { readDigestLink, type DigestAction, type DigestLinkClaim } from '../../mta/inbound/digest-links.js';
import type { QuarantineRow } from '../../storage/ports/quarantine.js';
import { ApiError } from '../errors.js';
import type { Services } from '../services.js';
import { html, when, type Html } from './html.js';
import { page } from './layout.js';
import type { LinkPageDeps } from './link-sign-in.js';
import { mintLoginToken, validLoginToken } from './login-token.js';
import { cookie, cookieNames, parseCookies, readForm, sameToken } from './session.js';

const ASK: Record<DigestAction, { title: string; button: string }> = {
  release: { title: 'Release this message?', button: 'Release' },
  safelist: { title: 'Release this message and safelist its sender?', button: 'Release and safelist' },
  delete: { title: 'Delete this message?', button: 'Delete' },
};

/** Why a link did nothing, with the status of its page. */
const REFUSED = {
  invalid: [403, 'This link is not valid.'],
  expired: [403, 'This link has expired: the message is no longer kept.'],
  form: [403, 'The form expired. Open the link from the digest again.'],
  gone: [200, 'Nothing to do: this message is no longer held for you (it was released, deleted or has expired).'],
  virus: [403, 'This message carries a virus: it is never released from a digest. Ask your administrator if you need it.'],
  'not-admin': [403, 'This link was for an administrator of the domain; that address is no longer one.'],
  busy: [409, 'The message is being released right now. Try again in a minute.'],
  failed: [503, 'The message could not be queued for delivery; nothing changed. Try again later.'],
} as const satisfies Record<string, readonly [number, string]>;
type Refusal = keyof typeof REFUSED;

const frame = (title: string, body: Html) => page(title, html`<div class="login"><h1>${title}</h1>${body}</div>`);

function details(row: QuarantineRow, claim: DigestLinkClaim): Html {
  return html`<table><tbody>
<tr><th>From</th><td>${row.from_header ?? (row.mail_from || '<>')}</td></tr>
<tr><th>Subject</th><td>${row.subject ?? '(no subject)'}</td></tr>
<tr><th>Date</th><td>${when(row.created_at)}</td></tr>
<tr><th>Held for</th><td>${heldBecause(row)}</td></tr>
<tr><th>${claim.admin ? 'Recipients' : 'For'}</th><td>${claim.admin ? row.rcpt_to.join(', ') : claim.address}</td></tr>
</tbody></table>`;
}

function doneText(o: Extract<DigestOutcome, { done: unknown }>, row: QuarantineRow, claim: DigestLinkClaim): string {
  if (o.done === 'deleted') return 'Deleted: the message will not be delivered.';
  const to = claim.admin ? 'its recipients' : claim.address;
  const safelist = o.safelisted === undefined ? '' : o.safelisted
    ? ` Mail from ${row.mail_from} is safelisted${claim.admin ? ` for ${row.domain}` : ' for you'} from now on.`
    : ' The sender could not be safelisted (no sender address, or the lists are full).';
  return `Released: the message is on its way to ${to}.${safelist}`;
}

/** The handler of /console/digest (GET: the confirmation page; POST: the action). */
export function createDigestPage(services: Services, deps: LinkPageDeps) {
  const actionDeps = (): DigestActionDeps => ({
    store: services.quarantine, relay: services.relayInbound, bayes: services.bayes, now: services.now,
    lists: services.inboundLists, domains: services.inboundDomains,
    maxListEntries: services.config.inbound.listEntriesPerAccount, logger: services.logger,
  });

  function refuse(ctx: Koa.Context, why: Refusal, claim?: DigestLinkClaim): void {
    // Which message and address only when the MAC held (a forged token's fields are nobody's); never the token.
    services.logger.info({ component: 'quarantine-digest', reason: why, quarantineId: claim?.quarantineId, address: claim?.address }, 'digest link refused');
    const [status, text] = REFUSED[why];
    deps.render(ctx, status, frame('Quarantine', html`<p class="${status === 200 ? 'empty' : 'error'}">${text}</p>`));
  }

  return async function digestPage(ctx: Koa.Context): Promise<void> {
    ctx.state.routeTemplate = '/console/digest';
    const secure = deps.secure(ctx);
    const names = cookieNames(secure);
    if (ctx.method === 'GET') {
      const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
      const claim = readDigestLink(services.digestLinks.secret, token, services.now());
      if (claim === undefined || claim === 'expired') return refuse(ctx, claim ?? 'invalid');
      const row = await digestMessage(actionDeps(), claim);
      if (!row) return refuse(ctx, 'gone', claim);
      if (claim.action !== 'delete' && isVirus(row)) return refuse(ctx, 'virus', claim);
      // Double-submitted like the sign-in form (login-token.ts): the button works from this page only. A token still
      // good is kept, so several links opened side by side (one per tab) all work.
      const had = parseCookies(ctx.headers.cookie)[names.login] ?? '';
      const csrf = validLoginToken(services.consoleSecret, had, services.now()) ? had : mintLoginToken(services.consoleSecret, services.now());
      if (csrf !== had) ctx.append('Set-Cookie', cookie(names.login, csrf, { secure, maxAgeSeconds: 3600 }));
      const ask = ASK[claim.action];
      return deps.render(
        ctx,
        200,
        frame(
          ask.title,
          html`${details(row, claim)}
<form method="post" action="/console/digest"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="token" value="${token}">
<button class="${claim.action === 'delete' ? 'danger' : ''}">${ask.button}</button></form>
<p class="empty">Nothing happens until you press the button.</p>`,
        ),
      );
    }
    if (ctx.method !== 'POST') throw new ApiError(405, ['method not allowed'], { Allow: 'GET, POST' });
    const form = await readForm(ctx.req);
    const login = parseCookies(ctx.headers.cookie)[names.login] ?? '';
    if (!sameToken(form.get('_csrf'), login) || !validLoginToken(services.consoleSecret, login, services.now())) return refuse(ctx, 'form');
    const claim = readDigestLink(services.digestLinks.secret, form.get('token'), services.now());
    if (claim === undefined || claim === 'expired') return refuse(ctx, claim ?? 'invalid');
    // Read before acting: a deleted message has no row left to name in the answer.
    const row = await digestMessage(actionDeps(), claim);
    const outcome = await runDigestAction(actionDeps(), claim);
    if ('refused' in outcome || !row) return refuse(ctx, 'refused' in outcome ? outcome.refused : 'gone', claim);
    deps.render(ctx, 200, frame('Quarantine', html`<p class="flash">${doneText(outcome, row, claim)}</p>${details(row, claim)}`));
  };
}
