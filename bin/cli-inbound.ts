// Owns the operator's inbound commands: provisioning a domain for an account, which (unlike the API) may overlap
// another customer's domain — the operator decides who receives mail for a subdomain — showing and setting a
// domain's quarantine digests, and listing and removing the recipients created with PUT /inbound/v1/users.
import { normaliseDomain, normaliseEmail } from '../filters/inbound-names.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import { DIGEST_INTERVALS, type DigestInterval, type InboundDomainStore, type ProvisionResult } from '../storage/ports/inbound-domains.js';
import type { InboundRecipientStore } from '../storage/ports/inbound-recipients.js';
import { headed, iso, requireAccount, UsageError, type CliIo, type Opts } from './cli-common.js';

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
  if (sub === 'digest') return digestCommand(accounts, domains, opts, io, now);
  if (sub !== 'provision') throw new UsageError('usage: sluice inbound-domains provision|digest --account H --domain D');
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

/**
 * `sluice inbound-domains digest --account H --domain D [--interval hourly|daily|weekly|off] [--admins yes|no]`:
 * sets the domain's quarantine digests as PUT /inbound/v1/domains/{domain}/settings does with quarantineDigest and
 * quarantineDigestAdmins (what is not given keeps), and shows the setting.
 */
async function digestCommand(accounts: AccountStore, domains: InboundDomainStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const account = await requireAccount(accounts, opts.account);
  const name = normaliseDomain(opts.domain ?? '');
  if (!name) throw new UsageError('--domain D (a domain name) is required');
  if (opts.interval !== undefined && !(DIGEST_INTERVALS as readonly string[]).includes(opts.interval)) {
    throw new UsageError(`--interval must be one of ${DIGEST_INTERVALS.join(', ')}`);
  }
  if (opts.admins !== undefined && opts.admins !== 'yes' && opts.admins !== 'no') throw new UsageError('--admins must be yes or no');
  let row = await domains.findDomain(name);
  if (!row || row.account_id !== account.id) throw new Error(`"${opts.domain}" is no inbound domain of account "${account.handle}"`);
  if (opts.interval !== undefined || opts.admins !== undefined) {
    const settings = {
      ...(opts.interval !== undefined ? { digestInterval: opts.interval as DigestInterval } : {}),
      ...(opts.admins !== undefined ? { digestAdmins: opts.admins === 'yes' } : {}),
    };
    await domains.updateSections(row.id, { settings }, now());
    row = (await domains.findDomainById(row.id))!;
  }
  io.stdout(
    opts.json
      ? JSON.stringify({ domain: row.domain, quarantineDigest: row.digest_interval, quarantineDigestAdmins: row.digest_admins }) + '\n'
      : `${row.domain}: quarantine digest ${row.digest_interval}${row.digest_admins ? ', and the whole domain\'s to its admins' : ''}\n`,
  );
  return 0;
}

/**
 * `sluice inbound-recipients list --account H [--domain D] [--limit N] [--json]`: the account's recipients created
 * with PUT /inbound/v1/users (every domain, whatever key it is bound to), by address;
 * `sluice inbound-recipients remove --account H --email E`: removes one with its recipient-level list entries and its
 * admin role, as DELETE /inbound/v1/users/{email} does.
 */
export async function inboundRecipientsCommand(
  sub: string | undefined,
  accounts: AccountStore,
  domains: InboundDomainStore,
  recipients: InboundRecipientStore,
  opts: Opts,
  io: CliIo,
): Promise<number> {
  if (sub !== 'list' && sub !== 'remove') throw new UsageError('usage: sluice inbound-recipients list|remove --account H');
  const account = await requireAccount(accounts, opts.account);
  if (sub === 'remove') {
    const email = normaliseEmail(opts.email ?? '');
    if (!email) throw new UsageError('--email E (an e-mail address) is required');
    if (!(await recipients.removeRecipient(account.id, email))) throw new Error(`${email} is no recipient of account "${account.handle}"`);
    io.stdout(opts.json ? JSON.stringify({ removed: email }) + '\n' : `removed recipient ${email} with its own list entries and admin role\n`);
    return 0;
  }
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
  let domainId: number | null = null;
  if (opts.domain !== undefined) {
    const name = normaliseDomain(opts.domain);
    const row = name === undefined ? undefined : await domains.findDomain(name);
    if (!row || row.account_id !== account.id) throw new Error(`"${opts.domain}" is no inbound domain of account "${account.handle}"`);
    domainId = row.id;
  }
  const page = await recipients.listRecipients({ accountId: account.id, keyId: null, domainId, limit, offset: 0 });
  const rows = page.rows.map((r) => ({ email_address: r.address, domain: r.domain, admin: r.admin, filter: r.filter, created_at: iso(r.created_at) }));
  io.stdout(
    opts.json
      ? JSON.stringify(rows) + '\n'
      : headed(['ADDRESS', 'ROLE', 'FILTER', 'CREATED'], rows.map((r) => `${r.email_address}\t${r.admin ? 'admin' : 'user'}\t${r.filter ? 'filtered' : 'unfiltered'}\t${r.created_at}\n`).join('')) +
          `${page.total} recipient${page.total === 1 ? '' : 's'}${page.total > rows.length ? ` (${rows.length} shown)` : ''}\n`,
  );
  return 0;
}
