// Owns `sluice console`: operator tokens for the web console (create — shown once —, list, revoke) and the second
// factor of console sign-in (TOTP: enrol — the secret shown once —, disable).
import { newTotpSecret, otpauthUri } from '../control-api/console/totp.js';
import type { Store } from '../storage/ports/store.js';
import { headed, iso, requireAccount, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

export async function consoleCommand(
  sub: string | undefined,
  rest: string[],
  stores: Pick<Store, 'console' | 'totp' | 'accounts'>,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const store = stores.console;
  if (sub === 'totp') return totpCommand(rest, stores, opts, io, now);
  if (sub === 'token') {
    const { id, token } = await store.createToken(opts.label ?? null, now());
    io.stdout(
      opts.json
        ? JSON.stringify({ id, token }) + '\n'
        : `operator token ${id} (shown only once; sign in at /console with it):\n${token}\n`,
    );
    return 0;
  }
  if (sub === 'tokens') {
    const rows = (await store.listTokens()).map((r) => ({ id: r.id, label: r.label, created_at: iso(r.created_at) }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : headed(['ID', 'CREATED', 'LABEL'], rows.map((r) => `${r.id}\t${r.created_at}\t${r.label ?? ''}\n`).join('')) || 'no operator tokens\n');
    return 0;
  }
  if (sub === 'revoke') {
    const id = requireId(rest[0] ?? opts.id);
    if (!await store.revokeToken(id, now())) throw new Error(`no live operator token ${id}`);
    io.stdout(`revoked operator token ${id}; its console sessions ended\n`);
    return 0;
  }
  throw new UsageError('usage: sluice console token|tokens|revoke|totp');
}

const TOTP_USAGE = 'usage: sluice console totp enroll|disable operator|--account H';

/**
 * `sluice console totp enroll operator|--account H`: a new secret (replacing any earlier one), printed once as an
 * otpauth:// URI and in base32; from then on sign-in with an operator token (operator) or with any API key of the
 * account also needs the current code. `disable` removes it.
 */
async function totpCommand(rest: string[], stores: Pick<Store, 'totp' | 'accounts'>, opts: Opts, io: CliIo, now: () => number): Promise<number> {
  const [action, who, ...extra] = rest;
  if ((action !== 'enroll' && action !== 'disable') || extra.length > 0) throw new UsageError(TOTP_USAGE);
  if ((who === 'operator') === (opts.account !== undefined) || (who !== undefined && who !== 'operator')) {
    throw new UsageError(`${TOTP_USAGE} (one of the two)`);
  }
  const account = who === 'operator' ? undefined : await requireAccount(stores.accounts, opts.account);
  const owner = account?.id ?? null;
  const name = account ? `account ${account.handle}` : 'the operator';
  if (action === 'disable') {
    if (!await stores.totp.disable(owner)) throw new Error(`${name} has no authenticator enrolled`);
    io.stdout(`second factor removed for ${name}: console sign-in needs the key or token alone\n`);
    return 0;
  }
  const secret = newTotpSecret();
  const uri = otpauthUri(secret, account ? account.handle : 'operator');
  await stores.totp.enroll(owner, secret, now());
  io.stdout(
    opts.json
      ? JSON.stringify({ owner: account ? account.handle : 'operator', secret, uri }) + '\n'
      : `authenticator enrolled for ${name} (shown only once; add it to an authenticator app):\n${uri}\nsecret (base32): ${secret}\n` +
        'console sign-in now also needs its current 6-digit code\n',
  );
  return 0;
}
