// Owns what stands between a claimed outbound group and its dial: which sending address it leaves from (its pool's,
// in turn), whether shaping (suspensions, throttles, warm-up caps) and the destination's pace let it go now, and the
// shaper's reading of the replies afterwards. The worker (./worker.ts) dials; this decides whether and from where.
import type { Logger } from 'pino';
import type { DeliveryResult } from '../delivery/smtp-client.js';
import type { RecipientResult } from '../delivery/smtp-results.js';
import type { Shaped } from '../delivery/shaping.js';
import type { MessageRow } from '../../storage/ports/queue.js';

export interface SendGateDeps {
  /**
   * The local addresses and EHLO names a message may leave from, the next in turn first (its sending pool:
   * mta/delivery/pools.ts); empty for the default address.
   */
  sourcesOf?: (message: MessageRow) => readonly { address: string; ehlo: string }[];
  /**
   * Shaping that listens (mta/delivery/shaping.ts): `gate` says whether a sending address may start a transaction
   * to a host now (else when to try again: suspensions, throttles, warm-up caps); `observe` reads the replies.
   */
  shaper?: {
    gate: (host: string, source: string | undefined, now: number) => Promise<number | undefined>;
    observe: (host: string, source: string | undefined, results: readonly RecipientResult[], now: number) => Promise<Shaped>;
  };
  /**
   * The destination's per-minute pace (mta/delivery/destination-pace.ts): undefined to go on (counted), else when to try
   * again. The group is then given back due at that time, its attempt not counted: deferred, never refused.
   */
  pace?: (hostName: string, now: number) => Promise<number | undefined>;
  now: () => number;
}

type Source = { address: string; ehlo: string };

export function createSendGate(deps: SendGateDeps, log: Logger) {
  return {
    /**
     * The address a message's group to MX `host` leaves from: the first of its candidates (the pool's, in turn; else
     * the default) the shaper lets through, then the destination's per-minute pace; else when to try again (the
     * earliest any candidate would allow). Shaping and pools are about outbound mail leaving for the world: relayed
     * mail goes to its domain's own downstreams, and a DSN from the default address, neither shaped.
     */
    async pick(message: MessageRow, host: string): Promise<{ source?: Source; wait?: number; reason?: string }> {
      const outbound = message.kind === 'outbound';
      const candidates = outbound ? (deps.sourcesOf?.(message) ?? []) : [];
      let source: Source | undefined = candidates[0];
      if (deps.shaper && outbound) {
        let wait: number | undefined;
        let passed = false;
        for (const c of candidates.length > 0 ? candidates : [undefined]) {
          const w = await deps.shaper.gate(host, c?.address, deps.now());
          if (w === undefined) {
            source = c;
            passed = true;
            break;
          }
          wait = wait === undefined ? w : Math.min(wait, w);
        }
        if (!passed) return { wait, reason: 'shaping (a suspension, throttle or warm-up cap of every sending address)' };
      }
      const paced = await deps.pace?.(host, deps.now());
      return paced === undefined ? (source ? { source } : {}) : { wait: paced, reason: 'destination rate limit' };
    },

    /**
     * The shaper's reading of an outbound dial's replies. Its failure (the store cannot record an activation) is
     * logged and changes nothing: the dial's result stands, so a delivered message is never recorded as anything else.
     */
    async observe(message: MessageRow, result: DeliveryResult, host: string, source: string | undefined): Promise<Shaped | undefined> {
      if (!deps.shaper || message.kind !== 'outbound') return undefined;
      // The client names the host that answered `name[address]:port`; rules and providers are about its name.
      const answered = result.host?.replace(/\[.*$/, '') || host;
      try {
        return await deps.shaper.observe(answered, source, result.results, deps.now());
      } catch (err) {
        log.error({ err, queueId: message.request_id, host: answered }, 'shaping rules could not act on the replies');
        return undefined;
      }
    },
  };
}
