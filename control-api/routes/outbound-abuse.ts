// Owns POST /outbound/v1/remediation (api.md §6): lifting the block of a sender identity, scoped by key and by the
// optional X-Customer-Handle header.
import { Type } from '@sinclair/typebox';
import type { AccountRow, KeyPrincipal } from '../../storage/accounts.js';
import { ApiError, badRequest, forbidden, notFound } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError } from '../schemas.js';
import type { Services } from '../services.js';
import { visibleAccounts } from './outbound-search.js';

const coded = (description: string) => ({ description, schema: CodedError });

/**
 * The accounts a request acts on: without `X-Customer-Handle`, every account the key sees (its own, and a parent's
 * sub-accounts); with it, only the account it names — the key's own, or for a parent key one of its live
 * sub-accounts. Any other handle is 403.
 */
export function customerScope(s: Services, principal: KeyPrincipal, header: string | string[] | undefined): number[] {
  const handle = (Array.isArray(header) ? header[0] : header)?.trim();
  if (handle === undefined || handle === '') return visibleAccounts(s, principal);
  if (handle === principal.account.handle) return [principal.account.id];
  const sub: AccountRow | undefined =
    principal.account.parent_id === null ? s.accounts.findSubAccount(principal.account.id, handle) : undefined;
  if (!sub) throw forbidden(`X-Customer-Handle "${handle}" does not match this API key's account`);
  return [sub.id];
}

const Delisted = Type.Object({
  status: Type.Literal('delisted'),
  sender: Type.String({ description: 'the envelope sender of the message (or the sender given)' }),
  message_id: Type.Union([Type.String(), Type.Null()], { description: 'the message_id given, or null' }),
  sender_id: Type.String({ description: 'Sluice extension: the sender identity whose block was lifted (account|x-authuser|user)' }),
});

export const outboundAbuseRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/outbound/v1/remediation',
    summary: 'Delist: lift the block of the sender identity behind a message (message_id wins) or an envelope sender',
    tags: ['outbound'],
    auth: 'api',
    query: Type.Object({
      message_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998, description: 'Message-ID (without <>) of a logged message' })),
      sender: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'envelope sender address, or a sender identity' })),
    }),
    responses: {
      200: { description: 'the block was lifted; the identity may send again', schema: Delisted },
      400: coded('neither message_id nor sender given'),
      401: coded('missing or unknown API key'),
      403: coded('API key of the wrong scope, or X-Customer-Handle names another account'),
      404: coded('nothing matching is blocked'),
      429: coded('this identity was delisted too often within 24 hours (abuse.delist_per_day); the operator must lift it (sluice senders unblock)'),
    },
    handler: (s, { principal, query, headers }) => {
      if (query.message_id === undefined && query.sender === undefined) {
        throw badRequest('message_id or sender is required (query parameters)');
      }
      const accounts = customerScope(s, principal, headers['x-customer-handle']);
      const target = query.message_id !== undefined ? { messageId: query.message_id } : { sender: query.sender };
      const r = s.abuse.remediate(accounts, target);
      if (!r.ok && r.reason === 'not-found') {
        throw notFound(
          query.message_id !== undefined
            ? `no blocked sender identity behind message ${query.message_id}`
            : `no blocked sender identity for ${query.sender}`,
        );
      }
      if (!r.ok) {
        throw new ApiError(429, [
          `sender ${r.senderId} was already delisted ${r.used} times within 24 hours; ask the operator to lift the block (sluice senders unblock)`,
        ]);
      }
      return {
        status: 200,
        body: { status: 'delisted', sender: r.envelopeSender, message_id: query.message_id ?? null, sender_id: r.senderId },
      };
    },
  }),
];
