// Owns the Bodies port: where message bytes live, written before the message that names them commits.
import type { Readable } from 'node:stream';

/**
 * A message body, stored or about to be. Opaque outside storage: only the backend that made it reads it (inline
 * bytes carried into the accept commit, a spool file, a blob row…); everyone else passes it along and reads `size`.
 */
export interface BodyRef {
  /** Bytes of the body. */
  readonly size: number;
  /** Which body: stable for a stored body; never parsed outside storage. */
  readonly key: string;
}

/**
 * Message bodies. A body is written first (`write`), then the unit that stores the message names it (the Queue
 * port's `accept`); delivery reads it back as a stream. Implementations keep small bodies inline in the accept commit
 * and may stream large ones elsewhere; either way, once `accept` resolved, the body is as durable as its message.
 */
export interface BodyStore {
  /**
   * Takes a body and returns its reference. Resolves once the body is durable, or — for a body kept inline — once
   * it is held for the accept commit that names it (which makes it durable with its message). A reference that no
   * accepted message names is an orphan; `sweep` removes those.
   */
  write(body: Buffer | Readable): Promise<BodyRef>;
  /** The body's bytes as a stream; rejects when no such body is stored (released or never accepted). */
  open(ref: BodyRef): Promise<Readable>;
  /** Frees a stored body no delivery needs any more (its last delivery ended); unknown references are ignored. */
  release(ref: BodyRef): Promise<void>;
  /** Removes bodies written before `olderThan` (ms) that no stored message names; returns how many. */
  sweep(olderThan: number): Promise<number>;
}
