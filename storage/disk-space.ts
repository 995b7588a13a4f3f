// Owns the free-space check of data_dir's disk (`queue.min_free_bytes`, as Postfix's queue_minfree): asked before a
// message is received, answered from one statfs per second at most; and the seam's word for a file that cannot be
// written (a full disk), so message files fail as the database does.
import fsp from 'node:fs/promises';
import { StorageUnavailable } from './ports/health.js';

/** File-system error codes that mean "storage is unavailable" (the reasons of storage/ports/health.ts): message files
 * and the database's own files (storage/sqlite/write-health.ts) read the same table. */
export const FILE_FAILURES: Readonly<Record<string, string>> = { ENOSPC: 'disk-full', EDQUOT: 'disk-full', EIO: 'io-error', EROFS: 'read-only' };

/**
 * `err` as the storage seam reports it: a write of a message file that failed because the disk is full (or
 * read-only, or failing) becomes a StorageUnavailable (its `code` still ENOSPC…), which every caller answers as a
 * temporary failure (452 4.3.1 / 503); any other error is returned as it is.
 */
export function asStorageFailure(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof StorageUnavailable || typeof code !== 'string') return err;
  const reason = FILE_FAILURES[code];
  return reason ? new StorageUnavailable(reason, code, { cause: err }) : err;
}

export interface RoomCheckOptions {
  /** A directory on the disk to check (data_dir). */
  dir: string;
  /** Bytes that must stay free; 0 turns the check off. */
  minFreeBytes: number;
  now: () => number;
  /** How long one answer is reused (default 1000 ms): a burst of connections costs one statfs. */
  ttlMs?: number;
}

/** Bytes available to an unprivileged writer on the file system holding `dir` (statfs f_bavail × f_bsize). */
export async function freeBytes(dir: string): Promise<number> {
  const s = await fsp.statfs(dir);
  return s.bavail * s.bsize;
}

/**
 * A check that answers true while the disk of `dir` has more than `minFreeBytes` free. A statfs that fails rejects
 * (the caller answers a temporary error: unknown means temporary).
 */
export function createRoomCheck(opts: RoomCheckOptions): { hasRoom(): Promise<boolean> } {
  const ttl = opts.ttlMs ?? 1000;
  let cached: { at: number; room: boolean } | undefined;
  return {
    async hasRoom() {
      if (opts.minFreeBytes <= 0) return true;
      const now = opts.now();
      if (cached && now - cached.at < ttl && now >= cached.at) return cached.room;
      const room = (await freeBytes(opts.dir)) >= opts.minFreeBytes;
      cached = { at: now, room };
      return room;
    },
  };
}
