// Owns the rule that what Sluice writes under data_dir is private to the user it runs as: files 0600, the directories
// it creates 0700, whatever the umask and whatever the mode of a data_dir that existed before (Postfix keeps its
// queue 0600/0700 for the same reason: the database holds DKIM private keys, the webhook signing key and mail).
import fs from 'node:fs';

/** Mode of every file Sluice writes under data_dir. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of every directory Sluice creates under data_dir (data_dir itself, when Sluice creates it). */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `dir` (and missing parents) 0700 and sets `dir` itself to 0700 when it already existed: the directories
 * this is called for (tls/, acme/, run/) are Sluice's own. The umask cannot widen the mode (it only clears bits)
 * and the explicit chmod undoes a narrower one.
 */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  fs.chmodSync(dir, PRIVATE_DIR_MODE);
}

/**
 * Writes `data` to `file` created 0600 and sets 0600 again afterwards: writeFile's mode applies only when it creates
 * the file, so a file left by an older version (or a restore) with a wider mode is narrowed too. `flag: 'wx'` fails
 * when the file exists.
 */
export function writePrivateFile(file: string, data: string | Buffer, o: { flag?: 'w' | 'wx' } = {}): void {
  fs.writeFileSync(file, data, { mode: PRIVATE_FILE_MODE, flag: o.flag ?? 'w' });
  fs.chmodSync(file, PRIVATE_FILE_MODE);
}

/**
 * Makes the SQLite database file at `dbPath` exist with mode 0600 before SQLite opens it, and narrows its companions
 * (-wal, -shm, -journal) that exist already. SQLite creates a new database 0644 & ~umask, and creates -wal and -shm
 * with the mode of the database file (sqlite.org, os_unix.c findCreateFileMode): a 0600 database keeps them 0600.
 * A companion owned by another user (EPERM) keeps its mode: SQLite can still use it, and only its owner may change it.
 */
export function preparePrivateDatabase(dbPath: string): void {
  // Something else than a file at the path (a directory): SQLite's own open says what is wrong with it.
  const found = fs.statSync(dbPath, { throwIfNoEntry: false });
  if (found && !found.isFile()) return;
  fs.closeSync(fs.openSync(dbPath, 'a', PRIVATE_FILE_MODE));
  for (const f of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`]) {
    try {
      fs.chmodSync(f, PRIVATE_FILE_MODE);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && !(code === 'EPERM' && f !== dbPath)) throw err;
    }
  }
}
