// Owns the console's page chrome: the document head (assets from /console/assets), the account switcher, the
// navigation (one entry per view, so later views — opens/clicks, sender blocks and alerts — add a line) and sign-out.
import type { AccountRow, KeyScope } from '../../storage/ports/accounts.js';
import { href, html, type Html } from './html.js';
import type { Viewer } from './session.js';

/**
 * The views, in navigation order. `scope`: the API key scope of the REST routes the view stands for (the queue is
 * outbound mail: `api`); a session without it gets 404 and no link. `allAccounts`: the operator may look at every
 * account at once (`account=*`). `domainAdmin`: a domain admin's session (a login link's) has the view, held to its
 * domain by domain-scope.ts; `recipient`: a recipient's session (a digest's view link's) has it, held to its address;
 * every other view answers these sessions 404. `anyScope`: a session of either scope has it (the overview, which
 * shows each scope's part only).
 */
export const NAV: readonly { key: string; label: string; path: string; scope: KeyScope; anyScope?: boolean; allAccounts?: boolean; domainAdmin?: boolean; recipient?: boolean }[] = [
  { key: 'overview', label: 'Overview', path: '/console/overview', scope: 'api', anyScope: true, allAccounts: true },
  { key: 'queue', label: 'Queue', path: '/console/queue', scope: 'api', allAccounts: true },
  { key: 'quarantine', label: 'Quarantine', path: '/console/quarantine', scope: 'inbound', domainAdmin: true, recipient: true },
  { key: 'log', label: 'Log search', path: '/console/log', scope: 'api' },
  { key: 'deliverability', label: 'Deliverability', path: '/console/deliverability', scope: 'api' },
  { key: 'domains', label: 'Inbound domains', path: '/console/domains', scope: 'inbound', domainAdmin: true },
  { key: 'recipients', label: 'Recipients', path: '/console/recipients', scope: 'inbound', domainAdmin: true },
  { key: 'lists', label: 'Safelist & blocklist', path: '/console/lists', scope: 'inbound', domainAdmin: true, recipient: true },
  { key: 'inbound-log', label: 'Inbound log', path: '/console/inbound-log', scope: 'inbound', allAccounts: true, domainAdmin: true },
  { key: 'dkim', label: 'DKIM keys', path: '/console/dkim', scope: 'api' },
  { key: 'webhooks', label: 'Webhooks', path: '/console/webhooks', scope: 'api' },
  { key: 'senders', label: 'Sender blocks & alerts', path: '/console/senders', scope: 'api' },
  { key: 'keys', label: 'API keys', path: '/console/keys', scope: 'api' },
  { key: 'smtp-passwords', label: 'SMTP passwords', path: '/console/smtp-passwords', scope: 'api' },
  { key: 'sub-accounts', label: 'Sub-accounts', path: '/console/sub-accounts', scope: 'api' },
  { key: 'suppressions', label: 'Suppressions', path: '/console/suppressions', scope: 'api' },
  { key: 'lockdown', label: 'Lockdown', path: '/console/lockdown', scope: 'api' },
  { key: 'monitors', label: 'Monitors', path: '/console/monitors', scope: 'api' },
  { key: 'audit', label: 'Audit', path: '/console/audit', scope: 'api', allAccounts: true },
];

/** The views the viewer's navigation lists: those of its session's scope (a domain admin, a recipient: theirs only). */
function navOf(viewer: Viewer): typeof NAV {
  const mine = (n: (typeof NAV)[number]) =>
    viewer.recipient !== undefined ? n.recipient === true : viewer.domain === undefined || n.domainAdmin === true;
  return NAV.filter((n) => (n.anyScope === true || viewer.scopes.has(n.scope)) && mine(n));
}

/**
 * True when the viewer's session carries the scope the view `nav` needs (the operator carries every scope) and, for
 * a domain admin or a recipient, the view is one of theirs.
 */
export function mayView(viewer: Viewer, nav: string): boolean {
  return navOf(viewer).some((n) => n.key === nav);
}

/** Where a viewer lands (after sign-in, on /console): the first view its scope allows. */
export function homePath(viewer: Viewer): string {
  return navOf(viewer)[0]?.path ?? '/console/login';
}

/** `*` in the switcher: every account, and mail that has none (relayed inbound mail, DSNs). */
export const ALL_ACCOUNTS = '*';

export interface PageFrame {
  viewer: Viewer;
  /** The selected account; null when the operator looks at all of them. */
  account: AccountRow | null;
  csrf: string;
  active: string;
}

function accountLabel(a: AccountRow, accounts: AccountRow[]): string {
  const parent = a.parent_id === null ? undefined : accounts.find((p) => p.id === a.parent_id);
  return parent ? `${parent.handle} › ${a.handle}` : a.handle;
}

/** The whole document around a view's body. */
export function page(title: string, body: Html, frame?: PageFrame): Html {
  const head = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Sluice</title><link rel="stylesheet" href="/console/assets/console.css"><script src="/console/assets/console.js" defer></script></head>`;
  if (!frame) return html`${head}<body><main>${body}</main></body></html>`;
  const { viewer, account, csrf, active } = frame;
  const view = NAV.find((n) => n.key === active);
  const current = account?.handle ?? ALL_ACCOUNTS;
  const options = [
    ...(viewer.kind === 'operator' && view?.allAccounts ? [html`<option value="*" ${current === ALL_ACCOUNTS ? 'selected' : ''}>All accounts</option>`] : []),
    ...viewer.accounts.map((a) => html`<option value="${a.handle}" ${a.handle === current ? 'selected' : ''}>${accountLabel(a, viewer.accounts)}</option>`),
  ].map((o) => o);
  const who = viewer.kind === 'operator' ? 'operator' : viewer.recipient ?? (viewer.domain !== undefined ? `admin of ${viewer.domain}` : `tenant ${viewer.home?.handle ?? ''}`);
  // A recipient's session is one address of one account: nothing to switch to.
  const switcher = viewer.recipient !== undefined ? '' : html`<form method="get" action="${view?.path ?? homePath(viewer)}"><label>Account <select name="account" data-autosubmit>${options.map((o) => o)}</select></label><noscript><button>Show</button></noscript></form>`;
  return html`${head}<body>
<header><span class="brand">Sluice</span>
${switcher}
<span class="who">Signed in as ${who}</span>
<form method="post" action="/console/logout"><input type="hidden" name="_csrf" value="${csrf}"><button class="secondary">Sign out</button></form></header>
<nav>${navOf(viewer).map((n) => html`<a href="${href(n.path, { account: n.allAccounts || current !== ALL_ACCOUNTS ? current : undefined })}" class="${n.key === active ? 'on' : ''}">${n.label}</a>`)}</nav>
<main>${body}</main></body></html>`;
}

/** A hidden CSRF field for a POST form. */
export const csrfField = (csrf: string) => html`<input type="hidden" name="_csrf" value="${csrf}">`;

/** A one-button POST form (retry, release, delete…), asking first when `confirm` is given. */
export function actionButton(action: string, label: string, csrf: string, o: { danger?: boolean; confirm?: string; fields?: Record<string, string> } = {}): Html {
  return html`<form class="inline" method="post" action="${action}" ${o.confirm ? html`data-confirm="${o.confirm}"` : ''}>${csrfField(csrf)}${Object.entries(o.fields ?? {}).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}<button class="${o.danger ? 'danger' : ''}">${label}</button></form>`;
}
