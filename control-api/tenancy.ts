// Owns the tenancy checks shared by routes: parent-only operations and "your own sub-account or 404".
import type { AccountRow, KeyPrincipal } from '../storage/ports/accounts.js';
import { forbidden, notFound } from './errors.js';
import type { Services } from './services.js';

/** Sub-account keys see only their own account: anything that manages sub-accounts needs a parent key (403). */
export function requireParent(principal: KeyPrincipal): AccountRow {
  if (principal.account.parent_id !== null) throw forbidden('a sub-account API key cannot manage sub-accounts');
  return principal.account;
}

/** The caller's own live sub-account by handle; 404 for unknown handles and other parents' sub-accounts alike. */
export async function ownSubAccount(services: Pick<Services, 'accounts'>, principal: KeyPrincipal, handle: string): Promise<AccountRow> {
  const parent = requireParent(principal);
  const sub = await services.accounts.findSubAccount(parent.id, handle);
  if (!sub) throw notFound(`sub-account "${handle}" not found`);
  return sub;
}
