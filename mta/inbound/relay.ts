// Owns inbound relay: committing accepted MX mail to the durable queue (routing it is delivery's: downstream-route.ts).
import { readSource, type ByteBudget } from '../../storage/scratch.js';
import type { InboundRelay } from './pipeline.js';
import type { Queue } from '../queue/queue.js';
import type { ArcSealer } from './arc-seal.js';

/**
 * The pipeline's relay step: one accepted message (kind `relay`: no account, no webhook events) per call, resolved only
 * once committed with synchronous=FULL, so the MX answers 250 only for mail that survives a crash (ARCHITECTURE
 * invariant 1). The worker routes its deliveries to the recipient domain's downstreams (delivery/downstream-route.ts).
 * The queue's door takes the message's bytes whole: they are held within `budget` (`smtp.max_buffered_bytes`) while
 * they are committed. With `arc` (inbound.arc.*) every relayed message is ARC-sealed first (./arc-seal.ts).
 */
export function createInboundRelay(deps: {
  queue: Pick<Queue, 'accept'>;
  hostname: string;
  arc?: ArcSealer | undefined;
  budget?: ByteBudget | undefined;
}): InboundRelay {
  return async (msg) => {
    const whole = await readSource(msg.message, deps.budget);
    try {
      // Sealed as it leaves, over the final bytes (a quarantine release too: the stored verdicts carry our results).
      // phase 2: the queue takes a BodyRef; then seal by hashing msg.message as it streams into the spool instead of
      // over this buffer (mailauth's sealer parses a stream too).
      const raw = deps.arc ? await deps.arc.seal(whole, msg.verdicts) : whole;
      await deps.queue.accept([
        {
          kind: 'relay',
          // The MX queue id (the one in `250 … queued as`) is the request id of relayed mail.
          sendRequestId: msg.queueId,
          messageId: msg.messageId || `${msg.queueId}@${deps.hostname}`,
          mailFrom: msg.mailFrom,
          raw,
          recipients: msg.rcptTo,
          verdicts: JSON.stringify(msg.verdicts),
        },
      ]);
    } finally {
      deps.budget?.give(msg.message.size);
    }
  };
}
