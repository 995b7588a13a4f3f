// Owns the message spool: large bodies as files under data_dir/spool/<2 hex>/<id>, each durable before its message
// commits (temp name, fsync, rename, directory fsync), read back as streams, removed when released, orphans swept.
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { asStorageFailure } from '../disk-space.js';

/** A body stored in the spool: its key names the file (`<2 hex>/<24 hex>`), never a path a caller chose. */
export interface SpoolRef {
  readonly key: string;
  readonly size: number;
}

/**
 * The file operations the spool makes, so a test can make one fail as a full disk would (ENOSPC at the write that
 * does not fit) without a small file system to fill. Defaults to node:fs/promises.
 */
export interface SpoolFileOps {
  open(file: string, flags: string, mode?: number): Promise<fsp.FileHandle>;
  write(fh: fsp.FileHandle, chunk: Buffer): Promise<void>;
}

const REAL_OPS: SpoolFileOps = {
  open: (file, flags, mode) => fsp.open(file, flags, mode),
  write: async (fh, chunk) => {
    // A FileHandle write may be partial: write until the whole chunk is on its way to the file.
    for (let at = 0; at < chunk.length; ) at += (await fh.write(chunk, at)).bytesWritten;
  },
};

export interface SpoolOptions {
  /** The spool directory (data_dir/spool); created (0700) when missing. */
  dir: string;
  /** fsync files and directories (default true). Only tests of what a crash leaves may turn it off. */
  fsync?: boolean;
  ops?: SpoolFileOps;
}

/** Files and their directories are private to the service (issue 22: data_dir holds 0600 files, 0700 directories). */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** Writes are gathered to this size: a 28 MB body is ~450 write calls, not one per 16 KB network chunk. */
const WRITE_BATCH = 64 * 1024;
const KEY_RE = /^([0-9a-f]{2})\/([0-9a-f]{24})$/;
const TEMP_RE = /^\.([0-9a-f]{24})\.tmp$/;

/** The error a write fails with when the disk (or quota) is full; `code` is kept so storageFailure() says disk-full. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

async function fsyncDir(dir: string): Promise<void> {
  // POSIX: a rename or a new entry is durable only once its directory is fsync'd (Postfix, maildir and SQLite all
  // do this); Linux allows fsync on a directory opened read-only.
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The spool. `write` resolves only once the body's file and its directory entry are on disk, so a message row that
 * names it may commit; a crash before that leaves at worst a temp file or a file no row names, which `sweep`
 * removes after its grace period. Files are never rewritten: a body is immutable from `write` to `release`.
 */
export function createSpool(opts: SpoolOptions) {
  const root = opts.dir;
  const sync = opts.fsync !== false;
  const ops = opts.ops ?? REAL_OPS;
  const made = new Set<string>();

  async function ensureDir(sub: string): Promise<string> {
    const dir = path.join(root, sub);
    if (made.has(sub)) return dir;
    await fsp.mkdir(root, { recursive: true, mode: DIR_MODE });
    let created = false;
    try {
      await fsp.mkdir(dir, { mode: DIR_MODE });
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // A new subdirectory's own entry must reach the disk before a file in it can be called durable.
    if (created && sync) await fsyncDir(root);
    made.add(sub);
    return dir;
  }

  function fileOf(ref: { key: string }): string {
    const m = KEY_RE.exec(ref.key);
    if (!m) throw new Error(`not a spool key: ${JSON.stringify(ref.key)}`);
    return path.join(root, m[1]!, m[2]!);
  }

  async function writeAll(fh: fsp.FileHandle, body: Buffer | Readable): Promise<number> {
    if (Buffer.isBuffer(body)) {
      await ops.write(fh, body);
      return body.length;
    }
    let size = 0;
    let batch: Buffer[] = [];
    let batched = 0;
    const flush = async () => {
      if (batched === 0) return;
      const chunk = batch.length === 1 ? batch[0]! : Buffer.concat(batch, batched);
      batch = [];
      batched = 0;
      await ops.write(fh, chunk);
    };
    // Reading with for-await pulls one chunk at a time: the source is paused while its chunk is written (backpressure).
    for await (const piece of body) {
      const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(piece as string);
      size += chunk.length;
      batch.push(chunk);
      batched += chunk.length;
      if (batched >= WRITE_BATCH) await flush();
    }
    await flush();
    return size;
  }

  return {
    dir: root,

    /**
     * Stores a body: written to `<2 hex>/.<id>.tmp`, fsync'd, renamed to `<2 hex>/<id>`, directory fsync'd. A failure
     * (the source stream erred; the disk is full: a StorageUnavailable whose `code` `isDiskFull` knows) removes the
     * temp file and rejects: nothing is half-stored.
     */
    async write(body: Buffer | Readable): Promise<SpoolRef> {
      // The source may fail before it is read (the client left while the directory was made): that failure is
      // met below, where the reading starts, not as an unhandled 'error' event.
      if (!Buffer.isBuffer(body)) body.on('error', () => {});
      const id = crypto.randomBytes(12).toString('hex');
      const sub = id.slice(0, 2);
      const dir = await ensureDir(sub).catch((err: unknown) => Promise.reject(asStorageFailure(err)));
      const temp = path.join(dir, `.${id}.tmp`);
      const fh = await ops.open(temp, 'wx', FILE_MODE).catch((err: unknown) => Promise.reject(asStorageFailure(err)));
      let size: number;
      try {
        size = await writeAll(fh, body);
        if (sync) await fh.sync();
      } catch (err) {
        await fh.close().catch(() => {});
        await fsp.rm(temp, { force: true });
        if (!Buffer.isBuffer(body)) body.destroy();
        throw asStorageFailure(err);
      }
      await fh.close();
      try {
        await fsp.rename(temp, path.join(dir, id));
        if (sync) await fsyncDir(dir);
      } catch (err) {
        await fsp.rm(temp, { force: true });
        throw asStorageFailure(err);
      }
      return { key: `${sub}/${id}`, size };
    },

    /**
     * `write` for bytes in memory, synchronously, with the same discipline (temp, fsync, rename, directory fsync):
     * for the start-up step that moves bodies out of the tables (migrations/018-spool.ts), where nothing else runs.
     */
    writeSync(bytes: Buffer): SpoolRef {
      const id = crypto.randomBytes(12).toString('hex');
      const sub = id.slice(0, 2);
      const dir = path.join(root, sub);
      fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
      const temp = path.join(dir, `.${id}.tmp`);
      const fd = fs.openSync(temp, 'wx', FILE_MODE);
      try {
        for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at);
        if (sync) fs.fsyncSync(fd);
      } catch (err) {
        fs.closeSync(fd);
        fs.rmSync(temp, { force: true });
        throw asStorageFailure(err);
      }
      fs.closeSync(fd);
      fs.renameSync(temp, path.join(dir, id));
      if (sync) {
        for (const d of [dir, root]) {
          const dfd = fs.openSync(d, 'r');
          try {
            fs.fsyncSync(dfd);
          } finally {
            fs.closeSync(dfd);
          }
        }
      }
      return { key: `${sub}/${id}`, size: bytes.length };
    },

    /** The body as a stream from byte `start` (default 0); rejects (ENOENT) when it is not stored. */
    async open(ref: { key: string }, start = 0): Promise<Readable> {
      const fh = await fsp.open(fileOf(ref), 'r');
      return fh.createReadStream({ start, autoClose: true });
    },

    /** Whether the body's file exists. */
    async has(ref: { key: string }): Promise<boolean> {
      return fsp.access(fileOf(ref)).then(
        () => true,
        () => false,
      );
    },

    /** Removes a body's file; an unknown or already removed body is ignored. */
    async release(ref: { key: string }): Promise<void> {
      await fsp.rm(fileOf(ref), { force: true });
    },

    /**
     * Removes temp files (a write a crash interrupted) and bodies no message names (`referenced` answers which of
     * the keys it is given are named), both only when last modified before `olderThan` (ms): a body being written
     * now, or written and not yet committed, is younger than any sensible grace period. Returns how many went.
     */
    async sweep(olderThan: number, referenced: (keys: string[]) => Promise<Set<string>> | Set<string>): Promise<number> {
      let removed = 0;
      for (const sub of await listDir(root)) {
        if (!/^[0-9a-f]{2}$/.test(sub)) continue;
        const dir = path.join(root, sub);
        const candidates: string[] = [];
        for (const name of await listDir(dir)) {
          const file = path.join(dir, name);
          const stat = await fsp.stat(file).catch(() => undefined);
          if (!stat?.isFile() || stat.mtimeMs >= olderThan) continue;
          if (TEMP_RE.test(name)) {
            await fsp.rm(file, { force: true });
            removed++;
          } else if (/^[0-9a-f]{24}$/.test(name)) {
            candidates.push(`${sub}/${name}`);
          }
        }
        if (candidates.length === 0) continue;
        const named = await referenced(candidates);
        for (const key of candidates) {
          if (named.has(key)) continue;
          await fsp.rm(fileOf({ key }), { force: true });
          removed++;
        }
      }
      return removed;
    },

    /** Every stored body (temp files excluded), for backup and the sweep's tests. */
    async list(): Promise<SpoolRef[]> {
      const out: SpoolRef[] = [];
      for (const sub of await listDir(root)) {
        if (!/^[0-9a-f]{2}$/.test(sub)) continue;
        for (const name of await listDir(path.join(root, sub))) {
          if (!/^[0-9a-f]{24}$/.test(name)) continue;
          const stat = await fsp.stat(path.join(root, sub, name)).catch(() => undefined);
          if (stat?.isFile()) out.push({ key: `${sub}/${name}`, size: stat.size });
        }
      }
      return out;
    },

    /** The file of a stored body (backup copies it); throws for a key that is not a spool key. */
    pathOf(ref: { key: string }): string {
      return fileOf(ref);
    },
  };
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

export type Spool = ReturnType<typeof createSpool>;
