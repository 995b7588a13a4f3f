// Owns the classifier learning inbound mail by itself (filters.bayes.autolearn; which mail: filters/autolearn.ts):
// each recipient account's model and the global one learn its copy's certain verdict, bounded per account per hour.
import type { Logger } from 'pino';
import type { BayesClassifier } from '../../filters/bayes.js';
import type { Metrics } from '../metrics.js';

export interface Autolearner {
  /**
   * Teaches `accountId`'s model and the global one `sample` (the sample the classifier judged) as `cls`, unless the
   * account's hourly bound is spent. Never throws: a failure is logged and counted, the message is not the worse.
   */
  learn(accountId: number, cls: 'spam' | 'ham', sample: Buffer): Promise<void>;
}

const HOUR = 3_600_000;

/**
 * Learns into the account's model and the global one (which every account reads, as SpamAssassin's and rspamd's
 * site-wide autolearn). A correction (quarantine release, delete as spam, a report) learns into the account's model
 * and moves the global model's record of the same message (BayesStore.correct; the same digest: the trace fields we
 * add are not tokens), so what the global model taught itself from one tenant's mail that tenant can undo, while no
 * tenant's own decision reaches the global model.
 */
export function createAutolearner(deps: {
  bayes: Pick<BayesClassifier, 'prepare' | 'learn'>;
  perHour: number;
  now: () => number;
  logger: Logger;
  metrics?: Metrics | undefined;
}): Autolearner {
  const log = deps.logger.child({ component: 'autolearn' });
  // Learns per account in the current clock hour; emptied when the hour turns, so it holds one hour's accounts.
  let hour = -1;
  const spent = new Map<number, number>();
  const count = (cls: string, outcome: string) => deps.metrics?.bayesAutolearned.inc({ class: cls, outcome });
  return {
    async learn(accountId, cls, sample) {
      const now = deps.now();
      if (Math.floor(now / HOUR) !== hour) {
        hour = Math.floor(now / HOUR);
        spent.clear();
      }
      const n = spent.get(accountId) ?? 0;
      if (n >= deps.perHour) return void count(cls, 'over_hourly_bound');
      spent.set(accountId, n + 1);
      try {
        // Tokenised once for both models.
        const item = await deps.bayes.prepare(sample, cls);
        const [outcome] = await deps.bayes.learn(accountId, [item], now);
        await deps.bayes.learn(null, [item], now);
        count(cls, outcome ?? 'learned');
      } catch (err) {
        count(cls, 'failed');
        log.warn({ accountId, cls, err: (err as Error).message }, 'autolearn failed; the message was handled as decided');
      }
    },
  };
}
