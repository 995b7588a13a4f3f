// Owns `sluice backup` and `sluice restore`: a backup is one directory (0700, every file 0600) holding the database
// (SQLite online backup), the spooled bodies that snapshot names, every other file of data_dir (TLS pair, ACME
// state, the first key) and a manifest of sizes, SHA-256 digests and modes; restore verifies all of it first.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { checkStoreFile, openStore, storeBodyFiles, storeFileName } from '../storage/open.js';
import { PRIVATE_FILE_MODE } from '../storage/private-files.js';
import { withoutPassword } from './cli-common.js';
import { runDir, runningServes } from './pid-registry.js';
import { VERSION } from './version.js';

const MANIFEST = 'manifest.json';
const FORMAT = 'sluice-backup/1';
const DB = storeFileName();

interface Entry {
  /** Relative to data_dir, `/`-separated. */
  path: string;
  size: number;
  sha256: string;
  /** The mode the file had in data_dir (for the record: restore writes every file 0600, as Sluice does). */
  mode: number;
}

interface Manifest {
  format: typeof FORMAT;
  sluice: string;
  created_at: string;
  files: Entry[];
}

/** The SHA-256 of a file, read in chunks (a spooled body may be tens of megabytes). */
function sha256(file: string): string {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) hash.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}

/**
 * Top-level entries of data_dir that are no state: the database and its WAL/SHM/journal (copied through the store),
 * run/ (which processes run now), tmp/ (messages being received) and spool/ (its bodies are copied by name, those
 * the database snapshot names: not an orphan, not the body of a message accepted after the snapshot).
 */
function skipped(dataDir: string, name: string): boolean {
  return name.startsWith(DB) || path.join(dataDir, name) === runDir(dataDir) || name === 'tmp' || name === 'spool';
}

/** How many times a backup starts over when a body its snapshot names was removed before it was copied. */
const ATTEMPTS = 3;

/** The files of data_dir a backup carries besides the database and its bodies (see `skipped`). */
function stateFiles(dataDir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const d of fs.readdirSync(path.join(dataDir, rel), { withFileTypes: true })) {
    const name = rel ? `${rel}/${d.name}` : d.name;
    if (!rel && skipped(dataDir, d.name)) continue;
    if (d.isDirectory()) out.push(...stateFiles(dataDir, name));
    else if (d.isFile()) out.push(name);
  }
  return out.sort();
}

/** A POSIX shell word: `word` in single quotes (a URL's `?` and `&` stay literal). */
const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Why `sluice backup PATH` refuses storage.backend = postgres, with the commands that back the database up and
 * restore it (PostgreSQL's own tools: pg_dump's directory format makes PATH a directory, as a Sluice backup does).
 * data_dir then holds no mail, only the TLS and ACME files and the first key, which copy as plain files.
 */
export function postgresBackupAdvice(url: string, target: string): string {
  const from = withoutPassword(url);
  const into = new URL(from);
  into.pathname = '/NEWDB';
  return (
    `storage.backend = postgres: sluice backup copies an SQLite data_dir, and this node's state is in PostgreSQL. ` +
    `Back the database up with:\n  pg_dump --format=directory --file=${shellWord(target)} ${shellWord(from)}\n` +
    `and restore it into a new, empty database (createdb NEWDB) with:\n  pg_restore --no-owner --dbname=${shellWord(into.href)} ${shellWord(target)}\n` +
    `(the password from PGPASSWORD or ~/.pgpass; data_dir's tls/ and acme/ copy as plain files)`
  );
}

/**
 * Writes a complete backup of `dataDir` to the directory `target` (which must not exist) while a server may run.
 * It is built under a temporary name and renamed at the end, so a `target` that exists is complete.
 */
export async function backup(dataDir: string, target: string): Promise<Manifest> {
  const dest = path.resolve(target);
  if (fs.existsSync(dest)) throw new Error(`${dest} already exists; a backup never overwrites`);
  if (!fs.existsSync(path.join(dataDir, DB))) throw new Error(`data_dir ${dataDir} holds no database to back up`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await backupOnce(dataDir, dest);
    } catch (err) {
      if (!(err instanceof BodyGone) || attempt >= ATTEMPTS) throw err;
    }
  }
}

/** A body the snapshot names was removed (released, pruned) before the backup copied it: the backup starts over. */
class BodyGone extends Error {}

/** One attempt of `backup` (`dest` resolved, checked absent). */
async function backupOnce(dataDir: string, dest: string): Promise<Manifest> {
  const tmp = `${dest}.partial-${process.pid}`;
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.mkdirSync(tmp, { mode: 0o700 });
  try {
    const files: Entry[] = [];
    const store = await openStore({ dataDir }, { now: Date.now });
    try {
      await store.backup(path.join(tmp, DB));
    } finally {
      await store.close();
    }
    fs.chmodSync(path.join(tmp, DB), 0o600);
    // The bodies the snapshot names, each with its digest (restore checks them like every file).
    const bodies = storeBodyFiles(path.join(tmp, DB));
    files.push({ path: DB, size: fs.statSync(path.join(tmp, DB)).size, sha256: sha256(path.join(tmp, DB)), mode: 0o600 });
    for (const rel of [...bodies, ...stateFiles(dataDir)]) {
      const from = path.join(dataDir, rel);
      const to = path.join(tmp, rel);
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
      try {
        fs.copyFileSync(from, to);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && rel.startsWith('spool/')) throw new BodyGone(`${rel} was removed during the backup`);
        throw err;
      }
      fs.chmodSync(to, 0o600);
      files.push({ path: rel, size: fs.statSync(to).size, sha256: sha256(to), mode: fs.statSync(from).mode & 0o777 });
    }
    const manifest: Manifest = { format: FORMAT, sluice: VERSION, created_at: new Date().toISOString(), files };
    fs.writeFileSync(path.join(tmp, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, dest);
    return manifest;
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Everything under `dir` as `/`-separated relative paths of files. */
function filesUnder(dir: string, rel = ''): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((d) => {
    const name = rel ? `${rel}/${d.name}` : d.name;
    return d.isDirectory() ? filesUnder(dir, name) : [name];
  });
}

/** Reads and checks a backup without writing anything: the manifest, every file's size and digest, the database. */
export function verifyBackup(source: string): Manifest {
  const dir = path.resolve(source);
  const fail = (why: string) => new Error(`backup ${dir}: ${why}; nothing was restored`);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch (err) {
    throw fail(`no readable ${MANIFEST} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): not a sluice backup`);
  }
  if (manifest.format !== FORMAT || !Array.isArray(manifest.files)) throw fail(`${MANIFEST} is not of format ${FORMAT}`);
  const listed = new Set<string>();
  for (const e of manifest.files) {
    // Paths stay inside the data directory: no absolute paths, no `..`.
    if (typeof e.path !== 'string' || path.isAbsolute(e.path) || e.path.split('/').some((p) => p === '..' || p === '')) {
      throw fail(`${MANIFEST} lists a bad path ${JSON.stringify(e.path)}`);
    }
    const file = path.join(dir, e.path);
    if (!fs.existsSync(file)) throw fail(`${e.path} is missing`);
    if (fs.statSync(file).size !== e.size || sha256(file) !== e.sha256) throw fail(`${e.path} does not match its SHA-256 in ${MANIFEST} (the backup is damaged)`);
    listed.add(e.path);
  }
  if (!listed.has(DB)) throw fail(`${MANIFEST} lists no ${DB}`);
  const extra = filesUnder(dir).filter((f) => f !== MANIFEST && !listed.has(f));
  if (extra.length > 0) throw fail(`${extra.join(', ')} not in ${MANIFEST}`);
  const problem = checkStoreFile(path.join(dir, DB));
  if (problem) throw fail(`${DB}: ${problem}`);
  return manifest;
}

/**
 * Restores `source` into `dataDir` (every file 0600, directories 0700): refused while a `sluice serve` runs on it, when it already holds state, or when
 * the backup does not verify. Files are staged beside data_dir and moved in at the end.
 */
export function restore(source: string, dataDir: string): Manifest {
  const running = runningServes(dataDir);
  if (running.length > 0) {
    throw new Error(`sluice serve (pid ${running.map((p) => p.pid).join(', ')}) is running on data_dir ${dataDir}: stop it first; nothing was restored`);
  }
  const present = fs.existsSync(dataDir) ? fs.readdirSync(dataDir).filter((n) => path.join(dataDir, n) !== runDir(dataDir)) : [];
  if (present.length > 0) {
    throw new Error(`data_dir ${dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}): restore into a new or empty directory (move the old one aside); nothing was restored`);
  }
  const manifest = verifyBackup(source);
  const stage = `${path.resolve(dataDir)}.restore-${process.pid}`;
  fs.mkdirSync(stage, { recursive: true, mode: 0o700 });
  try {
    for (const e of manifest.files) {
      const to = path.join(stage, e.path);
      fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
      fs.copyFileSync(path.join(source, e.path), to);
      fs.chmodSync(to, PRIVATE_FILE_MODE);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.renameSync(stage, dataDir);
  } catch (err) {
    fs.rmSync(stage, { recursive: true, force: true });
    throw err;
  }
  return manifest;
}
