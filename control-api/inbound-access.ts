// Owns the tenancy checks of /inbound/v1: which domain a key may manage, and the normalised domain path parameter.
import { normaliseDomain } from '../filters/inbound-names.js';
import type { KeyPrincipal } from '../storage/ports/accounts.js';
import type { InboundDomainRow } from '../storage/ports/inbound-domains.js';
import { badRequest, forbidden, notFound } from './errors.js';
import type { Services } from './services.js';

/** A domain name from the path, query or body in canonical form; 400 naming `field` when it is not a host name. */
export function domainOrBadRequest(raw: string, field: string): string {
  const name = normaliseDomain(raw);
  if (!name) throw badRequest(`${field}: "${raw}" is not a valid domain name`);
  return name;
}

/**
 * The provisioned domain `raw` names, if the caller may manage it:
 * - not a valid name → 400;
 * - unknown, or another account's domain or alias → 404 (no leak of who holds it);
 * - an alias of one of the caller's domains → 403 (manage it through its domain, OAS-I "alias domain");
 * - bound to another API key of the account (associate-key) → 403 until re-bound.
 */
export async function ownDomain(services: Pick<Services, 'inboundDomains'>, principal: KeyPrincipal, raw: string): Promise<InboundDomainRow> {
  const name = domainOrBadRequest(raw, 'domain');
  const row = await services.inboundDomains.findDomain(name);
  if (!row || row.account_id !== principal.account.id) {
    const alias = row ? undefined : await services.inboundDomains.findAlias(name);
    if (alias && alias.account_id === principal.account.id) {
      throw forbidden(`"${name}" is an alias of "${alias.domain}"; use the domain itself`);
    }
    throw notFound(`domain "${name}" not found`);
  }
  if (row.api_key_id !== null && row.api_key_id !== principal.keyId) {
    throw forbidden(`domain "${name}" is associated with another API key`);
  }
  return row;
}
