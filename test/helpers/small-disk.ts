// Owns giving a test a small file system of its own (a tmpfs of a chosen size) to fill up: disk-full paths are then
// the kernel's real ENOSPC, not an injected one. Needs root (CAP_SYS_ADMIN); without it the test is told so.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';

/**
 * A directory on a fresh tmpfs of `bytes`, unmounted (and removed) when `t` ends; undefined when this process may
 * not mount (not root, or a container without CAP_SYS_ADMIN): the caller skips or falls back to an injected error.
 */
export function smallDisk(t: Test, bytes: number): string | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-small-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    fs.rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  t.teardown(() => {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Fills the file system of `dir` until fewer than `leave` bytes are free (one file, `filler`). */
export function fillDisk(dir: string, leave: number): void {
  const free = () => {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  };
  const fd = fs.openSync(path.join(dir, 'filler'), 'w');
  try {
    const block = Buffer.alloc(64 * 1024, 0x66);
    while (free() > leave) {
      const n = Math.min(block.length, free() - leave);
      if (n <= 0) break;
      try {
        fs.writeSync(fd, block, 0, n);
      } catch {
        break;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}
