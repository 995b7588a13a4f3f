// Owns wiring quarantine digests (issue 37): the job the housekeeping leader runs, on the store, the durable queue,
// the operator's DKIM key and the secret that signs the digests' links.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createQuarantineDigests } from '../mta/jobs/quarantine-digests.js';
import type { AcceptedRelay } from '../mta/queue/accepted-message.js';
import type { Store } from '../storage/ports/store.js';
import { accountSigner } from './wiring-tls-out.js';

/** The digest job over `store`; its links are signed with `secret` (Services.digestLinks.secret: the same one). */
export function wireDigests(o: {
  config: Config;
  live: () => Config;
  store: Store;
  queue: { accept(messages: AcceptedRelay[]): Promise<unknown> };
  secret: Buffer;
  publicUrl: () => string;
  now: () => number;
  logger: Logger;
}) {
  const { store, config } = o;
  return createQuarantineDigests({
    digests: store.quarantineDigests,
    quarantine: store.quarantine,
    domains: store.inboundDomains,
    queue: o.queue,
    // Without inbound.digest_from: the host's own name, as alerts come from alerts@<smtp.hostname>.
    from: () => o.live().inbound.digestFrom ?? `quarantine@${config.smtp.hostname}`,
    sign: accountSigner({ ...o, account: () => o.live().inbound.digestAccount, what: 'quarantine digest' }),
    secret: o.secret,
    publicUrl: o.publicUrl,
    hostname: config.smtp.hostname,
    now: o.now,
    logger: o.logger,
  });
}
