// Owns the operator's inbound-domain command: provisioning a domain for an account, which (unlike the API) may
// overlap another customer's domain — the operator decides who receives mail for a subdomain.
import { normaliseDomain } from '../filters/inbound-names.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { InboundDomainStore, ProvisionResult } from '../storage/ports/inbound-domains.js';
import { requireAccount, UsageError, type CliIo, type Opts } from './cli-common.js';

const ALREADY = 'is already provisioned by this account';
const WHY: Record<Extract<ProvisionResult, { ok: false }>['reason'], string> = {
  'other-account': 'is already provisioned by another account',
  'is-alias': 'is already an alias of a provisioned domain',
  'alias-taken': 'has an alias that is taken',
  'bound-to-other-key': ALREADY,
  limit: 'would exceed the subscription\'s domain limit',
  overlap: 'overlaps another account\'s domain',
};

/**
 * `sluice inbound-domains provision --account H --domain D [--subscription S]`: provisions D for the account on its
 * active subscription S (default "default") with the default settings and no downstream address, also when D is a
 * parent or a subdomain of another account's domain or alias (the API refuses those with 409; the same name stays
 * refused).
 * The account's inbound keys then manage it over the API (downstream addresses, settings, aliases).
 */
export async function inboundDomainsCommand(
  sub: string | undefined,
  accounts: AccountStore,
  domains: InboundDomainStore,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  if (sub !== 'provision') throw new UsageError('usage: sluice inbound-domains provision --account H --domain D [--subscription S]');
  const account = await requireAccount(accounts, opts.account);
  const domain = normaliseDomain(opts.domain ?? '');
  if (!domain) throw new UsageError('--domain D (a domain name) is required');
  const handle = opts.subscription ?? 'default';
  const subscription = await domains.findSubscription(account.id, handle);
  if (!subscription || !subscription.active) throw new Error(`"${handle}" is not an active subscription of account "${account.handle}"`);
  const res = await domains.provision({
    accountId: account.id,
    callerKeyId: 0,
    bindKeyId: null,
    domain,
    subscription,
    sections: {},
    overwrite: false,
    now: now(),
    operator: true,
  });
  if (!res.ok) throw new Error(`${domain} ${WHY[res.reason]}; nothing provisioned`);
  if (!res.created) throw new Error(`${domain} ${ALREADY}; nothing changed`);
  io.stdout(
    opts.json
      ? JSON.stringify({ domain, account: account.handle, subscription: handle }) + '\n'
      : `provisioned ${domain} for ${account.handle} (subscription ${handle}); its inbound API keys manage it from now on\n`,
  );
  return 0;
}
