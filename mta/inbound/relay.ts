// Owns inbound relay: committing accepted MX mail to the durable queue (routing it is delivery's: downstream-route.ts).
import { readSource, type ByteBudget } from '../../storage/scratch.js';
import type { InboundRelay } from './pipeline.js';
import type { Queue } from '../queue/queue.js';

/**
 * The pipeline's relay step: one accepted message (kind `relay`: no account, no webhook events) per call, resolved only
 * once committed with synchronous=FULL, so the MX answers 250 only for mail that survives a crash (ARCHITECTURE
 * invariant 1). The worker routes its deliveries to the recipient domain's downstreams (delivery/downstream-route.ts).
 * The queue's door takes the message's bytes whole: they are held within `budget` (`smtp.max_buffered_bytes`) while
 * they are committed.
 */
export function createInboundRelay(deps: { queue: Pick<Queue, 'accept'>; hostname: string; budget?: ByteBudget | undefined }): InboundRelay {
  return async (msg) => {
    const raw = await readSource(msg.message, deps.budget);
    try {
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
