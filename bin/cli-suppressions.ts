// Owns `sluice suppressions import|export`: an account's suppression list as CSV with a header row, read and written
// by control-api/suppression-csv.ts (the console's Import and Export use the same), bounded by accounts.max_suppressions.
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../control-api/errors.js';
import { exportSuppressions, importSuppressions, maxCsvBytes } from '../control-api/suppression-csv.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { SuppressionStore } from '../storage/ports/suppressions.js';
import { requireAccount, UsageError, type CliIo } from './cli-common.js';

const USAGE = 'usage: sluice suppressions import FILE --account H [--json] | sluice suppressions export --account H [--out FILE]';

export async function suppressionsCommand(
  sub: string | undefined,
  rest: string[],
  stores: { accounts: AccountStore; suppressions: SuppressionStore },
  max: number,
  opts: { account?: string | undefined; out?: string | undefined; json?: boolean | undefined },
  io: CliIo,
  now: () => number,
): Promise<number> {
  if (sub === 'import') {
    if (rest.length !== 1) throw new UsageError(USAGE);
    const file = path.resolve(io.cwd, rest[0]!);
    const account = await requireAccount(stores.accounts, opts.account);
    // Read whole (it is checked whole before anything is stored), so its size is bounded first.
    const size = fs.statSync(file).size;
    if (size > maxCsvBytes(max)) throw new Error(`${file}: ${size} bytes is more than a list of ${max} entries (accounts.max_suppressions) can take`);
    let outcome;
    try {
      outcome = await importSuppressions(stores.suppressions, account.id, fs.readFileSync(file, 'utf8'), { max, now: now() });
    } catch (err) {
      // The API's errors in the CLI's shape: one line each, nothing stored.
      if (err instanceof ApiError) throw new Error(`${file}: nothing imported:\n  ${err.errors.join('\n  ')}`, { cause: err });
      throw err;
    }
    io.stdout(
      opts.json
        ? JSON.stringify({ account: account.handle, added: outcome.added, skipped: outcome.skipped }) + '\n'
        : `imported ${outcome.added} entries into ${account.handle}; ${outcome.skipped} skipped (already listed with that source, or repeated in the file)\n` +
            (outcome.datedNow ? 'the created_at column is not kept: the imported entries are dated now\n' : ''),
    );
    return 0;
  }
  if (sub === 'export') {
    if (rest.length !== 0) throw new UsageError(USAGE);
    const account = await requireAccount(stores.accounts, opts.account);
    const { csv, count } = await exportSuppressions(stores.suppressions, account.id);
    if (opts.out === undefined) {
      io.stdout(csv);
      return 0;
    }
    const target = path.resolve(io.cwd, opts.out);
    // Whole or not at all (a reader never sees half a list), and private: the list holds people's addresses.
    const temp = `${target}.${process.pid}.tmp`;
    fs.writeFileSync(temp, csv, { mode: 0o600 });
    fs.renameSync(temp, target);
    io.stdout(`exported ${count} entries of ${account.handle} to ${target}\n`);
    return 0;
  }
  throw new UsageError(USAGE);
}
