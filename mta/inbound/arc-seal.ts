// Owns ARC-sealing what the MX relays (RFC 8617): an ARC set over the message as it leaves, carrying our
// Authentication-Results, so a downstream behind us (Microsoft 365, Google Workspace) can trust our verdict.
import { sealMessage } from 'mailauth';
import type { Logger } from 'pino';
import type { AuthVerdict } from '../../filters/inbound-auth.js';
import type { StepVerdict } from '../../filters/inbound-verdicts.js';

export interface ArcSealer {
  /**
   * `raw` with an ARC set prepended: i= one above the incoming chain, ARC-Authentication-Results our
   * Authentication-Results (from the stored auth verdict), cv= what our validation of the incoming chain found
   * (none, pass, or fail for a broken chain — RFC 8617 §5.1.1). Unchanged when no set may be added (the newest
   * seal already says cv=fail, or 50 sets, §4.2.1) or signing failed; never throws.
   */
  seal(raw: Buffer, verdicts: readonly StepVerdict[]): Promise<Buffer>;
}

/** The sealer for `inbound.arc.*`: the d= domain and selector the operator published the key under. */
export function createArcSealer(opts: { domain: string; selector: string; privateKeyPem: string; logger: Logger }): ArcSealer {
  const log = opts.logger.child({ component: 'arc' });
  return {
    async seal(raw, verdicts) {
      const auth = verdicts.find((v): v is AuthVerdict => v.step === 'auth');
      if (!auth) return raw;
      const arc = auth.results.arc.result;
      const cv = arc === 'pass' || arc === 'fail' ? arc : 'none';
      try {
        const headers = await sealMessage(raw, {
          signingDomain: opts.domain,
          selector: opts.selector,
          privateKey: opts.privateKeyPem,
          authResults: auth.header.replace(/^Authentication-Results:\s*/i, ''),
          cv,
        });
        if (headers.length === 0) log.info({ cv }, 'message not sealed: its ARC chain may not be extended');
        return headers.length > 0 ? Buffer.concat([headers, raw]) : raw;
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'ARC sealing failed; relayed unsealed');
        return raw;
      }
    },
  };
}
