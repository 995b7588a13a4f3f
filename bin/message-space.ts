// Owns wiring where messages live while they are handled: the scratch area under data_dir/tmp, the process-wide
// bound on message bytes in memory (`smtp.max_buffered_bytes`) and the free-space check (`queue.min_free_bytes`).
import path from 'node:path';
import type { Config } from '../config/load.js';
import { createBufferBudget } from '../mta/buffer-budget.js';
import { createRoomCheck } from '../storage/disk-space.js';
import { createScratchArea } from '../storage/scratch.js';

/**
 * Bytes a message in progress keeps in memory before its scratch spills to a file: small mail (most of it) never
 * touches the disk before its commit, a large message costs this much memory at most.
 */
export const SCRATCH_MEMORY_BYTES = 256 * 1024;

/** The message space of one process; `scratch.clear()` should run once at start-up (before any listener). */
export function createMessageSpace(config: Pick<Config, 'dataDir' | 'smtp' | 'queue'>, now: () => number) {
  const budget = createBufferBudget(config.smtp.maxBufferedBytes);
  const scratch = createScratchArea({ dir: path.join(config.dataDir, 'tmp'), memoryBytes: SCRATCH_MEMORY_BYTES, budget });
  const room = createRoomCheck({ dir: config.dataDir, minFreeBytes: config.queue.minFreeBytes, now });
  return { budget, scratch, hasRoom: () => room.hasRoom() };
}

export type MessageSpace = ReturnType<typeof createMessageSpace>;
