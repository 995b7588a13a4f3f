// Owns the fast path's contract (issue 17): how the accept hands freshly committed, leased deliveries to a worker in
// the same process, and how much of a body travels with them.
import type { BodyRef } from '../../storage/ports/bodies.js';
import type { AcceptedIds, MessageRow } from '../../storage/ports/queue.js';

/**
 * A body up to this size that was in memory when it was accepted travels with the fast path's handoff (at most
 * the worker's in-flight deliveries × this, held until the first attempt ends); a larger one is read from the store.
 */
export const HANDOFF_BYTES_MAX = 64 * 1024;

/** A delivery the accept commit wrote already leased to the fast path's worker. */
export type LeasedDelivery = AcceptedIds['leased'][number];

/**
 * The fast path (issue 17): a worker in this process that takes freshly accepted deliveries straight from memory.
 * The accept unit writes them already claimed by it (the lease a claim would take), so a message costs the accept
 * commit and the outcome commit, not a third one for the claim, and its body is not read back.
 */
export interface FastPath {
  /** Reserves room for `n` deliveries; the lease to write, or undefined to leave them queued for a normal claim. */
  reserve(n: number): { worker: string; leaseUntil: number } | undefined;
  /** Gives back a reservation the commit did not use (the commit failed, or fewer deliveries were leased). */
  release(n: number): void;
  /**
   * Takes the committed, leased deliveries of one message, with the reference its body was written under (the worker
   * opens it per attempt: a stream from the store, never the message held whole in memory while it waits) and
   * whether that body has 8-bit bytes (seen as it was written: RFC 6152 BODY=8BITMIME needs it before MAIL FROM).
   * A small body (≤ HANDOFF_BYTES_MAX) that was in memory comes with its `bytes`, sent as they are on the first
   * attempt: no read back from the store, one write to the socket. `message` is the row as the store returned it
   * from the accept, if it did (else the worker reads it).
   */
  handoff(m: {
    messageRowId: number;
    message?: MessageRow;
    body: BodyRef;
    eightBit: boolean | undefined;
    bytes?: Buffer;
    deliveries: LeasedDelivery[];
    now: number;
  }): void;
}
