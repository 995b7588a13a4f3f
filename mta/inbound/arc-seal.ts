// Owns ARC-sealing what the MX relays (RFC 8617): an ARC set over the message as it leaves, carrying our
// Authentication-Results, so a downstream behind us (Microsoft 365, Google Workspace) can trust our verdict.
import { sealMessage } from '../../filters/mailauth-entry.js';
import type { Logger } from 'pino';
import type { AuthVerdict } from '../../filters/inbound-auth.js';
import type { StepVerdict } from '../../filters/inbound-verdicts.js';
import { joinSource, type MessageSource } from '../../storage/message-source.js';

export interface ArcSealer {
  /**
   * `message` with an ARC set prepended (a source that reads the set, then `message`: the body is hashed as it streams
   * from its scratch and never copied): i= one above the incoming chain, ARC-Authentication-Results our
   * Authentication-Results (from the stored auth verdict), cv= what our validation of the incoming chain found
   * (none, pass, or fail for a broken chain — RFC 8617 §5.1.1). Unchanged when no set may be added (the newest
   * seal already says cv=fail, or 50 sets, §4.2.1) or signing failed; never throws.
   */
  seal(message: MessageSource, verdicts: readonly StepVerdict[]): Promise<MessageSource>;
}

/** The sealer for `inbound.arc.*`: the d= domain and selector the operator published the key under. */
export function createArcSealer(opts: { domain: string; selector: string; privateKeyPem: string; logger: Logger }): ArcSealer {
  const log = opts.logger.child({ component: 'arc' });
  return {
    async seal(message, verdicts) {
      const auth = verdicts.find((v): v is AuthVerdict => v.step === 'auth');
      if (!auth) return message;
      const arc = auth.results.arc.result;
      const cv = arc === 'pass' || arc === 'fail' ? arc : 'none';
      const stream = message.open();
      try {
        // mailauth's sealer parses a stream: the header section is kept, the body only hashed (RFC 8617 §5.1.1's
        // AMS body hash is DKIM's, RFC 6376 §3.7), so sealing a message of any size holds its header section only.
        const headers = await sealMessage(stream, {
          signingDomain: opts.domain,
          selector: opts.selector,
          privateKey: opts.privateKeyPem,
          authResults: auth.header.replace(/^Authentication-Results:\s*/i, ''),
          cv,
        });
        if (headers.length === 0) log.info({ cv }, 'message not sealed: its ARC chain may not be extended');
        return headers.length > 0 ? joinSource([headers, { source: message }]) : message;
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'ARC sealing failed; relayed unsealed');
        return message;
      } finally {
        // Read to its end when sealed; a failure midway must not leave it half-read.
        stream.destroy();
      }
    },
  };
}
