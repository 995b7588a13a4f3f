// Owns the console's API keys view: an account's live keys (redacted), creating one (its secret shown once) and
// revoking one — a sub-account's through the /tx/v1/sub-account/{handle}/api-key routes, an account's own through
// control-api/account-access.ts (credential-scope.ts decides which).
import { CREDENTIAL_LIMIT, type KeyScope } from '../../storage/ports/accounts.js';
import { createOwnKey, credentialId, listOwnKeys, revokeOwnKey } from '../account-access.js';
import { badRequest } from '../errors.js';
import { credentialPath, shownOnce } from './credential-scope.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';

interface KeyLine {
  id: number;
  key: string;
  scope: KeyScope;
  created: number | null;
}

async function keysOf(c: ViewCtx): Promise<{ lines: KeyLine[]; viaRoute: boolean }> {
  const path = credentialPath(c);
  if (path.via === 'route') {
    const rows = (await c.call('GET', '/tx/v1/sub-account/{handle}/api-key', path.as, { params: { handle: path.handle }, query: { limit: String(CREDENTIAL_LIMIT) } })).body as { id: number; key: string }[];
    // The sub-account routes make and list scope-api keys only.
    return { lines: rows.map((r) => ({ id: r.id, key: r.key, scope: 'api', created: null })), viaRoute: true };
  }
  const rows = await listOwnKeys(c.services.accounts, path.account.id);
  return { lines: rows.map((r) => ({ id: r.id, key: r.redacted, scope: r.scope, created: r.created_at })), viaRoute: false };
}

async function show(c: ViewCtx, created?: { id: number; key: string; scope: KeyScope }): Promise<ViewResult> {
  const { lines, viaRoute } = await keysOf(c);
  const account = c.account?.handle ?? '';
  const session = c.viewer.kind === 'tenant' ? c.viewer.session.key_id : null;
  const revoke = (k: KeyLine) =>
    actionButton(href('/console/keys/revoke', { account }), 'Revoke', c.csrf, {
      danger: true,
      fields: { id: String(k.id) },
      confirm: k.id === session ? `Key ${k.id} is the one you are signed in with: revoking it signs you out. Revoke it?` : `Revoke API key ${k.id}? Requests made with it are refused from now on.`,
    });
  const scopes = viaRoute
    ? html`<input type="hidden" name="scope" value="api"><span class="empty">Scope api (a sub-account's keys send and manage its mail).</span>`
    : html`<label>Scope<select name="scope"><option value="api">api: send, suppressions, webhooks, metrics</option><option value="inbound">inbound: domains, quarantine, lists</option></select></label>`;
  return {
    title: 'API keys',
    body: html`<h1>API keys of ${account}</h1>${c.query.done === 'revoked' ? html`<p class="flash">Revoked.</p>` : ''}
${created ? shownOnce(`API key ${created.id} (scope ${created.scope})`, created.key) : ''}
<form class="filters" method="post" action="${href('/console/keys/create', { account })}">${csrfField(c.csrf)}${scopes}<button>Create key</button></form>
${table(
  ['ID', 'Scope', 'Key', 'Created', ''],
  lines.map((k) => [k.id, k.scope, html`<code>${k.key}</code>${k.id === session ? html` <span class="empty">(this session)</span>` : ''}`, stamp(k.created), revoke(k)]),
  'No live API keys.',
)}
<p class="empty">At most ${CREDENTIAL_LIMIT} live keys per account. A key is shown in full only when it is created.</p>`,
  };
}

async function create(c: ViewCtx): Promise<ViewResult> {
  const scope = c.form?.get('scope') ?? '';
  if (scope !== 'api' && scope !== 'inbound') throw badRequest('scope: must be api or inbound');
  const path = credentialPath(c);
  let made: { id: number; key: string };
  if (path.via === 'route') {
    if (scope !== 'api') throw badRequest('scope: a sub-account\'s keys are of scope api');
    made = (await c.call('POST', '/tx/v1/sub-account/{handle}/api-key', path.as, { params: { handle: path.handle } })).body as { id: number; key: string };
  } else {
    made = await createOwnKey(c.services.accounts, path.account.id, scope, c.services.now());
  }
  // Shown in this answer, not after a redirect: the secret never travels in a URL.
  return show(c, { ...made, scope });
}

async function revoke(c: ViewCtx): Promise<ViewResult> {
  const id = credentialId(c.form?.get('id'));
  const path = credentialPath(c);
  if (path.via === 'route') await c.call('DELETE', '/tx/v1/sub-account/{handle}/api-key/{id}', path.as, { params: { handle: path.handle, id: String(id) } });
  else await revokeOwnKey(c.services.accounts, path.account.id, id, c.services.now());
  return { redirect: href('/console/keys', { account: c.account?.handle, done: 'revoked' }) };
}

export const keyViews: ViewRoute[] = [
  { method: 'GET', path: '/console/keys', nav: 'keys', view: (c) => show(c) },
  { method: 'POST', path: '/console/keys/create', nav: 'keys', view: create },
  { method: 'POST', path: '/console/keys/revoke', nav: 'keys', view: revoke },
];
