// Owns the free-space check of data_dir's disk (`queue.min_free_bytes`, as Postfix's queue_minfree): asked before a
// message is received, answered from one statfs per second at most.
import fsp from 'node:fs/promises';

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
