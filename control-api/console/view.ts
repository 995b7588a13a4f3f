// Owns the contract between the console's router and its views: what a view is given and what it answers.
import type { AccountScope } from '../../mta/queue/queue-admin.js';
import type { AccountRow, KeyScope } from '../../storage/ports/accounts.js';
import type { Services } from '../services.js';
import type { RouteCaller } from './call-route.js';
import type { Html } from './html.js';
import type { Viewer } from './session.js';

/** What a view gets: the services, the REST routes to call, who is looking, at which account, and the request. */
export interface ViewCtx {
  services: Services;
  call: RouteCaller;
  viewer: Viewer;
  /** The selected account; null when the operator looks at every account (`account=*`, queue only). */
  account: AccountRow | null;
  query: Record<string, string>;
  params: Record<string, string>;
  /** The submitted form of a POST (its CSRF token already checked). */
  form: URLSearchParams | undefined;
  csrf: string;
  /**
   * Whom REST routes are called as: the selected account, with the session's key when it is the tenant's own, the
   * session's scopes (a route of another scope answers 404), a domain admin's one domain and a recipient's one
   * address (domain-scope.ts).
   */
  as(): { account: AccountRow; keyId: number; scopes: ReadonlySet<KeyScope>; domain: string | undefined; recipient: string | undefined };
  /** Accounts whose mail the view shows: the selected one and, for a parent, its sub-accounts; null = all. */
  scope(): Promise<AccountScope>;
}

/** `download`: a file the browser saves (a CSV export), sent as an attachment with the console's headers. */
export type ViewResult = { title: string; body: Html; status?: number } | { redirect: string } | { download: { filename: string; type: string; body: string } };

export interface ViewRoute {
  method: 'GET' | 'POST';
  /** `/console/queue/{id}`: the template is also the metrics route label. */
  path: string;
  nav: string;
  view: (c: ViewCtx) => ViewResult | Promise<ViewResult>;
}
