// Owns the one-click unsubscribe action (RFC 8058): token → suppression entry + `unsubscribed` event, atomically.
import type { AccountStore } from '../../storage/ports/accounts.js';
import type { QueueStore } from '../../storage/ports/queue.js';
import type { SuppressionStore } from '../../storage/ports/suppressions.js';
import { verifyUnsubscribeToken } from './unsubscribe-token.js';

export interface UnsubscribeDeps {
  secret: Buffer;
  accounts: Pick<AccountStore, 'findById'>;
  store: Pick<QueueStore, 'findSentTo'>;
  suppressions: Pick<SuppressionStore, 'unsubscribe'>;
  /** accounts.max_suppressions: past it an unsubscription replaces the oldest hard-bounce entry, never refused. */
  maxSuppressions?: number;
  now: () => number;
}

/** What a token names, or undefined when it is forged, truncated or its account is gone. */
export async function inspectUnsubscribe(deps: UnsubscribeDeps, token: string) {
  const data = verifyUnsubscribeToken(deps.secret, token);
  if (!data) return undefined;
  const account = await deps.accounts.findById(data.accountId);
  if (!account || account.deleted_at !== null) return undefined;
  return { ...data, account };
}

/**
 * Unsubscribes the token's recipient from the account's non-transactional mail: a suppression entry
 * (`list_unsubscribe` for the RFC 8058 one-click POST, `unsubscribe_link` for the confirmation page's button) and an
 * `unsubscribed` event in the same unit. The event carries the message's From (`email`), `smtp_id` and
 * `campaign_id` while the message is stored (retention); the token itself names account, recipient and request.
 * Repeating it is harmless (the entry is kept, no second event).
 */
export async function runUnsubscribe(deps: UnsubscribeDeps, token: string, via: 'one-click' | 'link'): Promise<boolean> {
  const info = await inspectUnsubscribe(deps, token);
  if (!info) return false;
  const now = deps.now();
  const source = via === 'one-click' ? 'list_unsubscribe' : 'unsubscribe_link';
  const sent = await deps.store.findSentTo(info.account.id, info.messageId, info.recipient);
  await deps.suppressions.unsubscribe({
    accountId: info.account.id,
    recipient: info.recipient,
    source,
    now,
    maxPerAccount: deps.maxSuppressions,
    event: {
      accountId: info.account.id,
      kind: 'unsubscribed',
      payload: {
        ...(sent?.from_email ? { email: sent.from_email } : {}),
        customer_handle: info.account.handle,
        timestamp: Math.floor(now / 1000),
        event: 'unsubscribed',
        request_id: info.messageId,
        ...(sent ? { smtp_id: `<${sent.message_id}>` } : {}),
        ...(sent?.campaign_id ? { campaign_id: sent.campaign_id } : {}),
        recipients: [info.recipient],
      },
      at: now,
    },
  });
  return true;
}
