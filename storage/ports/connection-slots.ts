// Owns the connection-slot port (issue 35): a destination limit's concurrent sessions (outbound.destination_limits
// `connections`) as numbered slots leased in the store, so the cap holds across every process and node.

/**
 * Slots of one MX host pattern are numbered 0 .. cap-1; a client holds one for each session it keeps open (busy or
 * idle) to a host of the pattern. A slot is held until `until` unless renewed: a process that dies frees its slots
 * when their leases lapse, and nothing frees another's live slot. Times are the caller's clock (ms); on PostgreSQL
 * they are sent as distances from it and judged by the database's clock (storage/postgres/leases.ts), so node
 * clocks never meet.
 */
export interface ConnectionSlotStore {
  /**
   * Takes the lowest free slot of `pattern` below `cap` for `owner`, held until `until` (a slot whose lease lapsed by
   * `now` is free); null when all `cap` are held. Also forgets every lapsed slot (of any pattern): the table holds
   * live sessions only, at most the sum of the configured caps.
   */
  take(pattern: string, cap: number, owner: string, now: number, until: number): Promise<number | null>;
  /** Extends every slot `owner` still holds to `until`; resolves with how many it holds. */
  renew(owner: string, until: number): Promise<number>;
  /** Gives `owner`'s `slot` of `pattern` back (nothing when another took it over after a lapse). */
  release(pattern: string, slot: number, owner: string): Promise<void>;
  /** Slots of `pattern` held at `now` (the console's and the tests' view). */
  held(pattern: string, now: number): Promise<number>;
}
