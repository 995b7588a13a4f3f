// Owns `sluice console`: operator tokens for the web console (create — shown once —, list, revoke).
import type { ConsoleStore } from '../storage/ports/console.js';
import { iso, requireId, UsageError, type CliIo, type Opts } from './cli-common.js';

export async function consoleCommand(sub: string | undefined, rest: string[], store: ConsoleStore, opts: Opts, io: CliIo, now: () => number): Promise<number> {
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
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : rows.map((r) => `${r.id}\t${r.created_at}\t${r.label ?? ''}\n`).join('') || 'no operator tokens\n');
    return 0;
  }
  if (sub === 'revoke') {
    const id = requireId(rest[0] ?? opts.id);
    if (!await store.revokeToken(id, now())) throw new Error(`no live operator token ${id}`);
    io.stdout(`revoked operator token ${id}; its console sessions ended\n`);
    return 0;
  }
  throw new UsageError('usage: sluice console token|tokens|revoke');
}
