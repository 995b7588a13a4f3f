// Owns inbound relay: committing accepted MX mail to the durable queue (routing it is delivery's: downstream-route.ts).
import type { InboundRelay } from './pipeline.js';
import type { Queue } from '../queue/queue.js';

/**
 * The pipeline's relay step: one queue entry (kind `relay`, no account, no webhook events) per call, resolved only
 * once committed with synchronous=FULL, so the MX answers 250 only for mail that survives a crash (ARCHITECTURE
 * invariant 1). The worker routes its deliveries to the recipient domain's downstreams (delivery/downstream-route.ts).
 */
export function createInboundRelay(deps: { queue: Queue; hostname: string }): InboundRelay {
  return async (msg) => {
    await deps.queue.enqueue([
      {
        account: null,
        kind: 'relay',
        sendRequestId: msg.queueId,
        messageId: msg.messageId || `${msg.queueId}@${deps.hostname}`,
        mailFrom: msg.mailFrom,
        fromEmail: null,
        subject: null,
        campaignId: null,
        transactional: true,
        raw: msg.raw,
        auth: null,
        upstream: null,
        upstreamHostname: null,
        senderId: null,
        recipients: msg.rcptTo,
        events: false,
        verdicts: JSON.stringify(msg.verdicts),
      },
    ]);
  };
}
