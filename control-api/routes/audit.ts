// Owns GET /tx/v1/audit (a Sluice extension, issue 38 item 3): the audit log of the key's account — and of its
// sub-accounts for a parent's key — newest first: who changed what, when, from where and how it ended.
import { Type } from '@sinclair/typebox';
import type { AuditRow } from '../../storage/ports/audit.js';
import { badRequest } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, DateOrDateTime, Limit, parseWhen, TxError } from '../schemas.js';
import type { Services } from '../services.js';

const Entry = Type.Object({
  id: Type.Integer({ description: 'the entry\'s id; pass the last one as `before` for the next page' }),
  at: Type.String({ format: 'date-time' }),
  via: Type.Union([Type.Literal('api'), Type.Literal('console'), Type.Literal('cli')]),
  actor_kind: Type.Union([Type.Literal('key'), Type.Literal('operator'), Type.Literal('cli')], {
    description: 'key: an API key (over the API, or a tenant signed in to the console with it); operator: the operator in the console; cli: the operator\'s command line',
  }),
  actor: Type.String({ description: 'the key id (key), the operator token (operator) or the OS user (cli)' }),
  key_id: Type.Union([Type.Integer(), Type.Null()]),
  account: Type.Union([Type.String(), Type.Null()], { description: 'the handle of the account the change was made as or on' }),
  action: Type.String({ description: 'the method and route template (`DELETE /tx/v1/monitors/{id}`) or the CLI command (`keys revoke`)' }),
  target: Type.Union([Type.String(), Type.Null()], { description: 'the ids of what was changed (`id=7`); never a body or a secret' }),
  address: Type.String({ description: 'the client\'s IP address; `local` for the CLI' }),
  status: Type.Integer({ description: 'the HTTP status answered (the CLI: its exit code)' }),
});

/** An entry as the API and the console show it. */
export async function renderAudit(s: Pick<Services, 'accounts'>, rows: readonly AuditRow[]) {
  const handles = new Map<number, string>();
  for (const r of rows) {
    if (r.accountId !== null && !handles.has(r.accountId)) handles.set(r.accountId, (await s.accounts.findById(r.accountId))?.handle ?? String(r.accountId));
  }
  return rows.map((r) => ({
    id: r.id,
    at: new Date(r.at).toISOString(),
    via: r.via,
    actor_kind: r.actorKind,
    actor: r.actor,
    key_id: r.keyId,
    account: r.accountId === null ? null : handles.get(r.accountId)!,
    action: r.action,
    target: r.target,
    address: r.address,
    status: r.status,
  }));
}

export const auditRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/tx/v1/audit',
    summary: 'Sluice extension: the audit log of this account (a parent\'s key: and of its sub-accounts), newest first',
    tags: ['audit'],
    auth: 'api',
    rateLimited: true,
    query: Type.Object({
      since: Type.Optional({ ...DateOrDateTime, description: 'entries at or after (inclusive)' }),
      until: Type.Optional({ ...DateOrDateTime, description: 'entries before (exclusive)' }),
      before: Type.Optional(BoundedInteger(1, Number.MAX_SAFE_INTEGER, { description: 'cursor: entries with an id below this (the last id of the previous page)' })),
      limit: Limit(1000, 100),
    }),
    responses: {
      200: { description: 'entries, newest first; a page shorter than `limit` is the last', schema: Type.Object({ audit: Type.Array(Entry) }) },
      400: { description: 'invalid filter', schema: TxError },
      403: { description: 'missing, unknown or wrong-scope key', schema: TxError },
    },
    handler: async (s, { principal, query }) => {
      const since = parseWhen('since', query.since);
      const until = parseWhen('until', query.until);
      if (since !== undefined && until !== undefined && since >= until) throw badRequest('since must be before until');
      const rows = await s.audit.list({
        accountId: principal.account.id,
        // A sub-account's key sees its own entries only (ARCHITECTURE invariant 5); a parent's, its sub-accounts' too.
        withSubAccounts: principal.account.parent_id === null,
        ...(since !== undefined ? { since } : {}),
        ...(until !== undefined ? { until } : {}),
        ...(query.before !== undefined ? { before: query.before } : {}),
        limit: query.limit ?? 100,
      });
      return { status: 200, body: { audit: await renderAudit(s, rows) } };
    },
  }),
];
