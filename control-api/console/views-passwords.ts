// Owns the console's SMTP passwords view: an account's submission passwords (redacted), creating one (shown once,
// with its user name) and deleting one — a sub-account's through the /tx/v1/sub-account/{handle}/smtp-password
// routes, an account's own through control-api/account-access.ts (credential-scope.ts decides which).
import { CREDENTIAL_LIMIT } from '../../storage/ports/accounts.js';
import { createOwnPassword, credentialId, deleteOwnPassword, listOwnPasswords } from '../account-access.js';
import { credentialPath, shownOnce } from './credential-scope.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';

interface PasswordLine {
  id: number;
  password: string;
  enabled: boolean;
  created: number | null;
}

async function passwordsOf(c: ViewCtx): Promise<PasswordLine[]> {
  const path = credentialPath(c);
  if (path.via === 'route') {
    const rows = (await c.call('GET', '/tx/v1/sub-account/{handle}/smtp-password', path.as, { params: { handle: path.handle } })).body as { id: number; smtp_password: string; enabled: boolean }[];
    return rows.map((r) => ({ id: r.id, password: r.smtp_password, enabled: r.enabled, created: null }));
  }
  return (await listOwnPasswords(c.services.accounts, path.account.id)).map((r) => ({ id: r.id, password: r.redacted, enabled: r.enabled, created: r.created_at }));
}

async function show(c: ViewCtx, created?: { id: number; password: string }): Promise<ViewResult> {
  const lines = await passwordsOf(c);
  const account = c.account?.handle ?? '';
  const remove = (p: PasswordLine) =>
    actionButton(href('/console/smtp-passwords/delete', { account }), 'Delete', c.csrf, {
      danger: true,
      fields: { id: String(p.id) },
      confirm: `Delete SMTP password ${p.id}? Clients using it can no longer submit mail.`,
    });
  return {
    title: 'SMTP passwords',
    body: html`<h1>SMTP passwords of ${account}</h1>${c.query.done === 'deleted' ? html`<p class="flash">Deleted.</p>` : ''}
${created ? shownOnce(`SMTP password ${created.id}`, created.password, html`<p>User name: <code>${account}</code> (SMTP AUTH PLAIN or LOGIN on the submission port, over TLS).</p>`) : ''}
<form class="filters" method="post" action="${href('/console/smtp-passwords/create', { account })}">${csrfField(c.csrf)}<span>User name <code>${account}</code></span><button>Create password</button></form>
${table(
  ['ID', 'Password', 'State', 'Created', ''],
  lines.map((p) => [p.id, html`<code>${p.password}</code>`, p.enabled ? 'enabled' : 'disabled', stamp(p.created), remove(p)]),
  'No SMTP passwords.',
)}
<p class="empty">At most ${CREDENTIAL_LIMIT} passwords per account. A password is shown in full only when it is created.</p>`,
  };
}

async function create(c: ViewCtx): Promise<ViewResult> {
  const path = credentialPath(c);
  let made: { id: number; password: string };
  if (path.via === 'route') {
    const b = (await c.call('POST', '/tx/v1/sub-account/{handle}/smtp-password', path.as, { params: { handle: path.handle } })).body as { id: number; smtp_password: string };
    made = { id: b.id, password: b.smtp_password };
  } else {
    made = await createOwnPassword(c.services.accounts, path.account.id, c.services.now());
  }
  // Shown in this answer, not after a redirect: the secret never travels in a URL.
  return show(c, made);
}

async function remove(c: ViewCtx): Promise<ViewResult> {
  const id = credentialId(c.form?.get('id'));
  const path = credentialPath(c);
  if (path.via === 'route') await c.call('DELETE', '/tx/v1/sub-account/{handle}/smtp-password/{id}', path.as, { params: { handle: path.handle, id: String(id) } });
  else await deleteOwnPassword(c.services.accounts, path.account.id, id, c.services.now());
  return { redirect: href('/console/smtp-passwords', { account: c.account?.handle, done: 'deleted' }) };
}

export const passwordViews: ViewRoute[] = [
  { method: 'GET', path: '/console/smtp-passwords', nav: 'smtp-passwords', view: (c) => show(c) },
  { method: 'POST', path: '/console/smtp-passwords/create', nav: 'smtp-passwords', view: create },
  { method: 'POST', path: '/console/smtp-passwords/delete', nav: 'smtp-passwords', view: remove },
];
