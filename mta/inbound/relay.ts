// Owns inbound relay: committing accepted MX mail to the durable queue (routing it is delivery's: downstream-route.ts).
import type { InboundRelay } from './pipeline.js';
import type { Queue } from '../queue/queue.js';
import type { ArcSealer } from './arc-seal.js';

/**
 * The pipeline's relay step: one accepted message (kind `relay`: no account, no webhook events) per call, resolved only
 * once committed with synchronous=FULL, so the MX answers 250 only for mail that survives a crash (ARCHITECTURE
 * invariant 1). The worker routes its deliveries to the recipient domain's downstreams (delivery/downstream-route.ts).
 * The message goes to the queue's door as the stream it is (our header section in front of the body in its scratch):
 * the door streams it into the body store, nothing here holds it whole. With `arc` (inbound.arc.*) every relayed
 * message is ARC-sealed first (./arc-seal.ts: the seal hashes the same stream and is put in front of it).
 */
export function createInboundRelay(deps: { queue: Pick<Queue, 'accept'>; hostname: string; arc?: ArcSealer | undefined }): InboundRelay {
  return async (msg) => {
    // Sealed as it leaves, over the final bytes (a quarantine release too: the stored verdicts carry our results).
    const body = deps.arc ? await deps.arc.seal(msg.message, msg.verdicts) : msg.message;
    await deps.queue.accept([
      {
        kind: 'relay',
        // The MX queue id (the one in `250 … queued as`) is the request id of relayed mail.
        sendRequestId: msg.queueId,
        messageId: msg.messageId || `${msg.queueId}@${deps.hostname}`,
        mailFrom: msg.mailFrom,
        body,
        recipients: msg.rcptTo,
        verdicts: msg.verdicts,
        ...(msg.log ? { inboundLog: msg.log } : {}),
      },
    ]);
  };
}
