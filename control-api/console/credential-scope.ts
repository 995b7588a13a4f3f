// Owns how the console's API keys and SMTP passwords views reach an account's credentials: a sub-account's through
// the /tx/v1/sub-account routes called as its parent (their tenancy checks apply), anything else — a tenant's own
// account, any account for the operator — through control-api/account-access.ts, as the CLI does.
import type { AccountRow } from '../../storage/ports/accounts.js';
import { notFound } from '../errors.js';
import { html, type Html } from './html.js';
import type { ViewCtx } from './view.js';

export type CredentialPath =
  | { via: 'route'; handle: string; as: ReturnType<ViewCtx['as']> }
  | { via: 'own'; account: AccountRow };

/**
 * The way to the selected account's credentials. A parent's session (or the operator) looking at a sub-account
 * calls the sub-account routes as that parent; a session of the account itself (its own api-scope key: the view is
 * of scope api, so an inbound key never gets here) and the operator reach its own ones.
 */
export function credentialPath(c: ViewCtx): CredentialPath {
  const own = c.as();
  const account = own.account;
  const isHome = c.viewer.kind === 'tenant' && c.viewer.home?.id === account.id;
  if (account.parent_id !== null && !isHome) {
    const parent = c.viewer.accounts.find((a) => a.id === account.parent_id);
    if (!parent) throw notFound(`account "${account.handle}" not found`);
    const keyId = c.viewer.kind === 'tenant' && c.viewer.home?.id === parent.id ? (c.viewer.session.key_id ?? 0) : 0;
    return { via: 'route', handle: account.handle, as: { ...own, account: parent, keyId } };
  }
  if (c.viewer.kind !== 'operator' && !isHome) throw notFound('no such page');
  return { via: 'own', account };
}

/** The one time a secret is shown: after its POST, never again (the store keeps only its hash). */
export function shownOnce(label: string, value: string, extra: Html | string = ''): Html {
  return html`<div class="notice"><p><strong>${label}</strong> — copy it now: it is shown only this once (Sluice keeps only its hash).</p>
<code class="copy" id="secret">${value}</code>${extra}</div>`;
}
