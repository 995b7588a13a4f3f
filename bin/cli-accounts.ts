// Owns the account commands of the CLI: accounts, API keys, SMTP passwords and operator lockdown authorizations.
import { domainToASCII } from 'node:url';
import { HANDLE_PATTERN } from '../control-api/schemas.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { KeyScope } from '../storage/ports/accounts.js';
import type { LockdownStore } from '../storage/ports/lockdown.js';
import { headed, iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

export async function accountsCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  if (sub === 'create') {
    const handle = opts.handle ?? `acct${Math.random().toString(36).slice(2, 10)}`;
    if (!new RegExp(HANDLE_PATTERN).test(handle)) throw new UsageError('--handle must be 3-128 lower-case letters or digits');
    if (opts.company !== undefined && (opts.company.length < 3 || opts.company.length > 128)) {
      throw new UsageError('--company must be 3-128 characters');
    }
    const res = await store.createParentWithKey({ handle, companyName: opts.company ?? null, now: now() });
    if (!res.ok) throw new Error(`handle "${handle}" already exists`);
    io.stdout(
      opts.json
        ? JSON.stringify({ handle, key: res.apiKey }) + '\n' // `key`, as keys create prints it (and the API's key field)
        : `created account ${handle}\nAPI key (scope api, shown once): ${res.apiKey}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = (await store.listParents()).map((a) => ({
      handle: a.handle,
      company_name: a.company_name,
      enabled: a.enabled,
      created_at: new Date(a.created_at).toISOString(),
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : headed(['HANDLE', 'COMPANY', 'STATE', 'CREATED'], rows.map((r) => `${r.handle}\t${r.company_name ?? ''}\t${r.enabled ? 'enabled' : 'suspended'}\t${r.created_at}\n`).join('')) || 'no accounts\n',
    );
    return 0;
  }
  throw new UsageError('usage: sluice accounts create|list');
}

/**
 * `sluice accounts set-pool --account H --pool NAME|none`: the sending pool (outbound.pools) the account's mail
 * leaves from; `none` removes its own, so its parent's (or the default address) applies. An unknown pool is refused.
 */
export async function setPoolCommand(store: AccountStore, pools: Readonly<Record<string, unknown>>, opts: Opts, io: CliIo): Promise<number> {
  const account = await requireAccount(store, opts.account);
  const name = opts.pool?.trim().toLowerCase();
  if (!name) throw new UsageError('usage: sluice accounts set-pool --account H --pool NAME|none');
  if (name !== 'none' && !Object.hasOwn(pools, name)) {
    const known = Object.keys(pools);
    throw new UsageError(`--pool ${name} is not a pool of outbound.pools (${known.length > 0 ? known.join(', ') : 'none configured'})`);
  }
  await store.setPool(account.id, name === 'none' ? null : name);
  const parent = account.parent_id === null ? undefined : await store.findById(account.parent_id);
  const own = name === 'none' ? null : name;
  const effective = own ?? parent?.pool ?? null;
  const source = own ? 'own' : parent?.pool ? 'parent' : 'default address';
  io.stdout(opts.json ? JSON.stringify({ account: account.handle, pool: effective, source }) + '\n' : `${account.handle}\t${effective ?? 'none'}\t(${source})\n`);
  return 0;
}

export async function keysCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const account = await requireAccount(store, opts.account);
  if (sub === 'create') {
    if (opts.scope !== 'api' && opts.scope !== 'inbound') throw new UsageError('--scope api|inbound is required');
    const res = await store.createApiKey(account.id, opts.scope as KeyScope, now());
    if (!res.ok) throw new Error(`account "${account.handle}" already has the maximum of 100 API keys`);
    io.stdout(
      opts.json
        ? JSON.stringify({ id: res.value.id, key: res.value.key, scope: opts.scope }) + '\n'
        : `API key ${res.value.id} (scope ${opts.scope}, shown once): ${res.value.key}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = (await store.listApiKeys(account.id)).map((k) => ({ id: k.id, key: k.redacted, scope: k.scope }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : headed(['ID', 'SCOPE', 'KEY'], rows.map((r) => `${r.id}\t${r.scope}\t${r.key}\n`).join('')) || 'no API keys\n');
    return 0;
  }
  if (sub === 'revoke') {
    const id = requireId(opts.id);
    if (!await store.revokeApiKey(account.id, id, now())) throw new Error(`no live API key ${id} on account "${account.handle}"`);
    io.stdout(`revoked API key ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice keys create|list|revoke');
}

export async function passwordsCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const account = await requireAccount(store, opts.account);
  if (sub === 'create') {
    const res = await store.createSmtpPassword(account.id, now());
    if (!res.ok) throw new Error(`account "${account.handle}" already has the maximum of 100 SMTP passwords`);
    io.stdout(
      opts.json
        ? JSON.stringify({ id: res.value.id, smtp_password: res.value.password, username: account.handle }) + '\n'
        : `SMTP password ${res.value.id} for user ${account.handle} (shown once): ${res.value.password}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = (await store.listSmtpPasswords(account.id)).map((p) => ({ id: p.id, smtp_password: p.redacted, enabled: p.enabled }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : headed(['ID', 'PASSWORD'], rows.map((r) => `${r.id}\t${r.smtp_password}\n`).join('')) || 'no SMTP passwords\n');
    return 0;
  }
  if (sub === 'delete') {
    const id = requireId(opts.id);
    if (!await store.deleteSmtpPassword(account.id, id, now())) throw new Error(`no SMTP password ${id} on account "${account.handle}"`);
    io.stdout(`deleted SMTP password ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice smtp-passwords create|list|delete');
}

export async function lockdownCommand(
  sub: string | undefined,
  store: AccountStore,
  allow: LockdownStore,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const account = await requireAccount(store, opts.account);
  if (sub === 'list') {
    const rows = (await allow.list(account.id)).map((r) => ({ domain: r.domain, created_at: iso(r.created_at) }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : rows.map((r) => `${r.domain}\n`).join(''));
    return 0;
  }
  if (sub !== 'allow' && sub !== 'deny') throw new UsageError('usage: sluice lockdown allow|deny|list');
  const domain = domainToASCII((opts.domain ?? '').trim().toLowerCase().replace(/\.$/, ''));
  if (!domain) throw new UsageError('--domain D (a domain name) is required');
  if (sub === 'allow') {
    await allow.allow(account.id, domain, now());
    io.stdout(`${domain} may send for ${account.handle}\n`);
  } else {
    if (!await allow.deny(account.id, domain)) throw new Error(`${domain} was not allowed for ${account.handle}`);
    io.stdout(`${domain} no longer allowed for ${account.handle} (DNS authorization still applies)\n`);
  }
  return 0;
}
