// Owns choosing the local address a message leaves from: its sending pool's addresses (outbound.pools), in turn.
import type { Logger } from 'pino';
import type { PoolAddress } from '../../config/keys-deliverability.js';
import type { MessageRow } from '../../storage/ports/queue.js';

/**
 * Creates `sourcesOf(message)`: empty for a message without a pool (the default address and smtp.hostname); else
 * the pool's addresses starting from the next in turn, round robin, so a pool's addresses share its mail — the
 * worker takes the first its gate lets through (mta/delivery/shaping.ts: one suspended or capped goes to the next). A pool that is gone from the
 * configuration since the message was accepted (a restart with another file) sends from the default address, with a
 * warning: the message was accepted, so it is delivered.
 */
export function createPoolPicker(pools: () => Readonly<Record<string, readonly PoolAddress[]>>, logger: Logger) {
  const turn = new Map<string, number>();
  const warned = new Set<string>();
  return (message: Pick<MessageRow, 'pool' | 'request_id'>): PoolAddress[] => {
    if (message.pool === null) return [];
    const list = pools()[message.pool];
    if (!list || list.length === 0) {
      if (!warned.has(message.pool)) logger.warn({ pool: message.pool, queueId: message.request_id }, 'sending pool no longer configured; sending from the default address');
      warned.add(message.pool);
      return [];
    }
    const i = (turn.get(message.pool) ?? 0) % list.length;
    turn.set(message.pool, (i + 1) % list.length);
    return [...list.slice(i), ...list.slice(0, i)];
  };
}
