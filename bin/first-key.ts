// Owns the first API key of a data_dir: the `default` account a first start creates, its key handed over in a 0600
// file before anything listens, and what a later start tells the operator while that hand-over is incomplete.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { SettingStore } from '../storage/ports/settings.js';
import { writePrivateFile } from '../storage/private-files.js';

/** The one command that makes a new API key for the `default` account. */
export const NEW_KEY_COMMAND = 'sluice keys create --account default --scope api';

/** Settings: when the first start created `default` (also set by older versions), and when its key file was written. */
const BOOTSTRAPPED = 'bootstrapped_at';
const HANDED_OVER = 'initial_key_file_at';

/** Where the first start of a data_dir leaves the `default` account's API key (0600), instead of the log. */
export function initialKeyFile(dataDir: string): string {
  return path.join(dataDir, 'initial-api-key');
}

/**
 * On a fresh data_dir (no account was ever created): creates the parent account `default` with one `api` key and
 * writes the key to data_dir/initial-api-key, readable by this user only — never to the log, whose journal keeps
 * every line — and says where. The caller runs this before anything listens, so a start that fails afterwards (a
 * port taken) leaves the key where the operator finds it. Returns the key (in-process tests use it).
 *
 * On any other start it returns undefined and logs what the operator needs, if anything: while the key file is
 * there, where it is; when `default` was created by a first start whose key file was never written (a start of an
 * older Sluice that failed before listening, or a failed write) and no key was made for it since, the one command
 * that makes one. Accounts made with the CLI are left alone (the CLI showed their keys).
 */
export async function handOverFirstKey(
  store: { accounts: AccountStore; settings: SettingStore },
  dataDir: string,
  logger: Logger,
  now: number,
): Promise<string | undefined> {
  const { accounts, settings } = store;
  const file = initialKeyFile(dataDir);
  const fields = { handle: 'default', key_file: file };
  if ((await accounts.isEmpty()) && (await settings.get(BOOTSTRAPPED)) === undefined) {
    const res = await accounts.createParentWithKey({ handle: 'default', companyName: 'Default', now });
    await settings.set(BOOTSTRAPPED, String(now));
    if (!res.ok) return undefined; // another process on this data_dir created it (and hands its key over)
    try {
      writePrivateFile(file, `${res.apiKey}\n`, { flag: 'wx' });
    } catch (err) {
      const why = (err as Error).message;
      logger.error({ ...fields, err: why, command: NEW_KEY_COMMAND }, `created account "default" but could not write its API key to ${file} (${why}); make a key with: ${NEW_KEY_COMMAND}`);
      return res.apiKey;
    }
    await settings.set(HANDED_OVER, String(now));
    logger.info(fields, `created account "default"; its API key is in ${file} (mode 0600): read it, then delete the file`);
    return res.apiKey;
  }
  const bootstrapped = await settings.get(BOOTSTRAPPED);
  if (bootstrapped === undefined) return undefined;
  if (fs.existsSync(file)) {
    if ((await settings.get(HANDED_OVER)) === undefined) await settings.set(HANDED_OVER, String(now));
    logger.info(fields, `the API key of account "default" is in ${file} (mode 0600): read it, then delete the file`);
    return undefined;
  }
  if ((await settings.get(HANDED_OVER)) !== undefined) return undefined; // handed over, read and deleted
  const account = await accounts.findByHandle('default');
  // A key made after the first start (`sluice keys create`) was shown when it was made.
  if (!account || (await accounts.listApiKeys(account.id)).some((k) => k.created_at > Number(bootstrapped))) return undefined;
  logger.warn(
    { ...fields, command: NEW_KEY_COMMAND },
    `account "default" has no API key that was ever shown (the first start created it but never wrote ${file}); make one with: ${NEW_KEY_COMMAND}`,
  );
  return undefined;
}
