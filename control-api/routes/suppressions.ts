// Owns the suppression-list routes (api.md §2.7) and the seed's alias POST /tx/v1/suppressions.
import { Type, type Static } from '@sinclair/typebox';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import type { NewSuppression, SuppressionRow, SuppressionSource } from '../../storage/ports/suppressions.js';
import { ApiError, badRequest, conflict } from '../errors.js';
import { defineRoute, type AnyRoute, type RequestInfo } from '../route.js';
import { DateOrDateTime, Limit, Offset, parseWhen, TxError } from '../schemas.js';
import type { Services } from '../services.js';

/** Total entries one request may create, counting the copies made for sub-accounts (api.md §2.7: 413 beyond). */
export const MAX_SUPPRESSION_ENTRIES = 1000;
export const SOURCES = ['api', 'unsubscribe_link', 'list_unsubscribe', 'hard_bounce', 'spam_complaint'] as const;
const TYPES = ['transactional', 'non-transactional'] as const;
/** A recipient the list takes: local@domain.tld without spaces, brackets or control characters. */
export const EMAIL_RE = /^[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]+@[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]+\.[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]+$/;

const Entry = Type.Object({
  recipient: Type.String({ minLength: 3, maxLength: 255 }),
  suppression_types: Type.Optional(
    Type.Array(Type.Union(TYPES.map((t) => Type.Literal(t)), { errorMessage: 'must be "transactional" or "non-transactional"' }), {
      minItems: 1,
      maxItems: 2,
      uniqueItems: true,
    }),
  ),
  notes: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  // Not in MailChannels' create schema, but the listed entry carries it: an import from another provider (or a
  // restore of this list) keeps why each recipient is suppressed instead of turning every entry into `api`.
  source: Type.Optional(
    Type.Union(SOURCES.map((x) => Type.Literal(x)), {
      default: 'api',
      description: 'how the entry got on the list (stored and listed as given)',
      errorMessage: `must be one of ${SOURCES.join(', ')}`,
    }),
  ),
});

const AddToSubAccounts = Type.Optional(Type.Boolean({ default: false }));

/** POST /tx/v1/suppression-list: MailChannels' body, `suppression_entries` required (OAS-E). */
const CreateBody = Type.Object({
  add_to_sub_accounts: AddToSubAccounts,
  suppression_entries: Type.Array(Entry),
});

/** POST /tx/v1/suppressions (the seed's path): `entries` is the seed's name for `suppression_entries`. */
const AliasBody = Type.Object({
  add_to_sub_accounts: AddToSubAccounts,
  suppression_entries: Type.Optional(Type.Array(Entry)),
  entries: Type.Optional(Type.Array(Entry)),
});

const Listed = Type.Object({
  recipient: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  notes: Type.Optional(Type.String()),
  sender: Type.Optional(Type.String()),
  source: Type.String(),
  suppression_types: Type.Array(Type.String()),
});

/** A stored entry as the list answers it (and the CSV export writes it: control-api/suppression-csv.ts). */
export function listedEntry(r: SuppressionRow): Static<typeof Listed> {
  return {
    recipient: r.recipient,
    created_at: new Date(r.created_at).toISOString(),
    ...(r.notes !== null ? { notes: r.notes } : {}),
    ...(r.sender !== null ? { sender: r.sender } : {}),
    source: r.source,
    suppression_types: [...(r.transactional ? ['transactional'] : []), ...(r.non_transactional ? ['non-transactional'] : [])],
  };
}

/**
 * Validates and inserts one request's entries (plus, with add_to_sub_accounts, a copy for every live sub-account,
 * suspended ones included: they may be re-activated) in one transaction; 409 stores nothing.
 * A sub-account key asking for add_to_sub_accounts gets 400 (a request problem, like any other invalid field).
 */
async function create(s: Services, principal: KeyPrincipal, body: Static<typeof AliasBody>) {
  // Error messages name the key the client actually sent (the seed alias uses `entries`).
  const key = body.suppression_entries !== undefined ? 'suppression_entries' : 'entries';
  const list = body.suppression_entries ?? body.entries;
  if (!list || list.length === 0) throw badRequest(`${key}: at least one entry is required`);
  const problems = list.flatMap((e, i) => (EMAIL_RE.test(e.recipient) ? [] : [`${key}[${i}].recipient: invalid email address`]));
  if (problems.length > 0) throw badRequest(...problems);
  const account = principal.account;
  if (body.add_to_sub_accounts && account.parent_id !== null) {
    throw badRequest('add_to_sub_accounts: only a parent account key may copy entries to sub-accounts');
  }
  const targets = [account.id];
  if (body.add_to_sub_accounts) for (const sub of await s.accounts.listSubAccounts(account.id, 1000, 0)) targets.push(sub.id);
  if (list.length * targets.length > MAX_SUPPRESSION_ENTRIES) {
    throw new ApiError(413, [`at most ${MAX_SUPPRESSION_ENTRIES} entries per request, sub-account copies included`]);
  }
  const entries: NewSuppression[] = targets.flatMap((accountId) =>
    list.map((e) => {
      const types = e.suppression_types ?? ['non-transactional'];
      return {
        accountId,
        recipient: e.recipient,
        source: e.source ?? 'api',
        transactional: types.includes('transactional'),
        nonTransactional: types.includes('non-transactional'),
        notes: e.notes ?? null,
        sender: null,
      };
    }),
  );
  const max = s.config.accounts.maxSuppressions;
  const res = await s.suppressions.insertMany(entries, s.now(), max);
  if (!res.ok && 'full' in res) {
    // 422 as the neighbours' per-account limits (API keys, SMTP passwords): 409 here means "already there", which a
    // client may take as success; a full list is not that (issue 31).
    const whose = res.full === account.id ? 'the account' : 'a sub-account';
    throw new ApiError(422, [`${whose} would hold more than ${max} suppression entries; remove some first`]);
  }
  if (!res.ok) throw conflict(`${res.duplicate} is already on the suppression list with this source`);
  return { status: 201 };
}

const createSpec = (path: string, summary: string, body: typeof CreateBody | typeof AliasBody) =>
  defineRoute({
    method: 'POST',
    path,
    summary,
    tags: ['suppressions'],
    auth: 'api',
    body,
    responses: {
      201: { description: 'created (all entries or none)' },
      400: { description: 'invalid entry (the message names the field)', schema: TxError },
      403: { description: 'key problem', schema: TxError },
      409: { description: 'an entry already exists', schema: TxError },
      422: { description: 'the list would hold more than accounts.max_suppressions entries (nothing stored)', schema: TxError },
      413: { description: 'more than 1,000 entries', schema: TxError },
    },
    handler: (s, { principal, body }: RequestInfo<unknown, unknown, Static<typeof AliasBody>>) => create(s, principal, body),
  });

export const suppressionRoutes: AnyRoute[] = [
  createSpec('/tx/v1/suppression-list', 'Add recipients to the suppression list', CreateBody),
  createSpec('/tx/v1/suppressions', 'Alias of POST /tx/v1/suppression-list (accepts `entries`)', AliasBody),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/suppression-list',
    summary: 'List suppression entries, newest first',
    tags: ['suppressions'],
    auth: 'api',
    query: Type.Object({
      recipient: Type.Optional(Type.String({ maxLength: 255 })),
      source: Type.Optional(Type.Union(SOURCES.map((x) => Type.Literal(x)))),
      created_before: Type.Optional(DateOrDateTime),
      created_after: Type.Optional(DateOrDateTime),
      limit: Limit(1000, 1000),
      offset: Offset(),
    }),
    responses: {
      200: { description: 'entries', schema: Type.Object({ suppression_list: Type.Array(Listed) }) },
      400: { description: 'invalid filter', schema: TxError },
    },
    handler: async (s, { principal, query }) => {
      const rows = await s.suppressions.list(principal.account.id, {
        recipient: query.recipient,
        source: query.source as SuppressionSource | undefined,
        createdBefore: parseWhen('created_before', query.created_before),
        createdAfter: parseWhen('created_after', query.created_after),
        limit: query.limit ?? 1000,
        offset: query.offset ?? 0,
      });
      return {
        status: 200,
        body: {
          suppression_list: rows.map(listedEntry),
        },
      };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/suppression-list/recipients/{recipient}',
    summary: 'Remove a recipient from the suppression list (source defaults to api; `all` removes every source)',
    tags: ['suppressions'],
    auth: 'api',
    params: Type.Object({ recipient: Type.String({ maxLength: 255 }) }),
    query: Type.Object({ source: Type.Optional(Type.Union([...SOURCES, 'all'].map((x) => Type.Literal(x)))) }),
    responses: { 204: { description: 'removed (also when nothing matched)' }, 400: { description: 'bad source', schema: TxError } },
    handler: async (s, { principal, params, query }) => {
      // @koa/router has already percent-decoded the segment; the SDK sends a raw "@", which arrives unchanged.
      await s.suppressions.delete(principal.account.id, params.recipient, (query.source ?? 'api') as SuppressionSource | 'all');
      return { status: 204 };
    },
  }),
];
