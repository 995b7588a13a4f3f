// Owns the quarantine routes under /inbound/v1/quarantine (a Sluice extension of the Inbound API): list, show, raw
// message, release (relays once) and delete, of a whole message or of one recipient's part of it.
import { Type } from '@sinclair/typebox';
import { normaliseEmail } from '../../filters/inbound-names.js';
import { canonicalRecipient } from '../../mta/inbound/digest-actions.js';
import { deleteQuarantined, releaseQuarantined } from '../../mta/inbound/quarantine-release.js';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import { QUARANTINE_LEASE_MS, quarantineStatus, type QuarantineRow } from '../../storage/ports/quarantine.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../errors.js';
import { domainOrBadRequest } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError, Paging } from '../schemas.js';
import type { Services } from '../services.js';

const Status = Type.Union([Type.Literal('held'), Type.Literal('releasing'), Type.Literal('released')]);

const QuarantinedMessage = Type.Object({
  id: Type.Integer(),
  domain: Type.String(),
  queue_id: Type.String(),
  mail_from: Type.String({ description: 'envelope sender; "" is the null sender <>' }),
  rcpt_to: Type.Array(Type.String()),
  client_ip: Type.String(),
  helo: Type.String(),
  from: Type.Union([Type.String(), Type.Null()]),
  subject: Type.Union([Type.String(), Type.Null()]),
  message_id: Type.Union([Type.String(), Type.Null()]),
  size: Type.Integer(),
  score: Type.Number(),
  reason: Type.String(),
  status: Status,
  created_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
  released_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const QuarantinedDetail = Type.Composite([
  QuarantinedMessage,
  Type.Object({ verdicts: Type.Array(Type.Unknown(), { description: 'verdict record of every filtering step' }) }),
]);

// Path parameters arrive as text: the id is validated as digits and converted in the handler.
const IdParams = Type.Object({ id: Type.String({ pattern: '^[1-9][0-9]{0,15}$', errorMessage: 'must be a quarantined message id' }) });

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function render(s: Services, row: QuarantineRow) {
  return {
    id: row.id,
    domain: row.domain,
    queue_id: row.queue_id,
    mail_from: row.mail_from,
    rcpt_to: row.rcpt_to,
    client_ip: row.client_ip,
    helo: row.helo,
    from: row.from_header,
    subject: row.subject,
    message_id: row.message_id,
    size: row.size,
    score: row.score,
    reason: row.reason,
    status: quarantineStatus(row, s.now(), QUARANTINE_LEASE_MS),
    created_at: iso(row.created_at) as string,
    expires_at: iso(row.expires_at) as string,
    released_at: iso(row.released_at),
  };
}

/**
 * The caller's quarantined message `id`: 404 when absent or another account's; 403 when its domain is bound to
 * another API key (associate-key), like every other route on that domain.
 */
async function ownMessage(s: Services, principal: KeyPrincipal, id: number): Promise<QuarantineRow> {
  const row = await s.quarantine.find(principal.account.id, id);
  if (!row) throw notFound(`quarantined message ${id} not found`);
  const domain = row.domain_id === null ? undefined : await s.inboundDomains.findDomainById(row.domain_id);
  if (domain && domain.api_key_id !== null && domain.api_key_id !== principal.keyId) {
    throw forbidden(`domain "${row.domain}" is associated with another API key`);
  }
  return row;
}

// `?recipient=`: a release or delete for that recipient alone, as a quarantine digest's link acts (a recipient's
// console session calls these with it pinned to its address).
const OneRecipient = {
  recipient: Type.Optional(Type.String({ maxLength: 320, description: 'act for this recipient of the message alone (it stays held for the others)' })),
};

/**
 * The `only` of a release or delete for one recipient: the message's recipients that are `raw` (as digests name
 * them: an alias domain's address counts as the domain's); undefined for the whole message. 404 when the message is
 * not held for that recipient.
 */
function onlyFor(row: QuarantineRow, raw: string | undefined): ((rcpt: string) => boolean) | undefined {
  if (raw === undefined) return undefined;
  const address = normaliseEmail(raw);
  if (!address) throw badRequest(`recipient: "${raw}" is not a valid e-mail address`);
  const only = (r: string) => canonicalRecipient(r, row.domain) === address;
  if (!row.rcpt_to.some(only)) throw notFound(`quarantined message ${row.id} is not held for ${address}`);
  return only;
}

/** Releasing and deleting train the classifier of the message's account (mta/inbound/quarantine-release.ts). */
const actionDeps = (s: Services) => ({ store: s.quarantine, relay: s.relayInbound, now: s.now, bayes: s.bayes });

const authErrors = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  403: { description: 'wrong key scope, or the domain is bound to another key', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};
const tags = ['inbound-quarantine'];

export const inboundQuarantineRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/quarantine',
    summary: 'Quarantined messages of the account, newest first (Sluice extension)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({
      domain: Type.Optional(Type.String({ maxLength: 1024 })),
      recipient: Type.Optional(Type.String({ maxLength: 320 })),
      sender: Type.Optional(Type.String({ maxLength: 320 })),
      status: Type.Optional(Status),
      start_date: Type.Optional(Type.String({ maxLength: 64, description: 'created at or after (ISO 8601 date-time)' })),
      end_date: Type.Optional(Type.String({ maxLength: 64, description: 'created before (ISO 8601 date-time)' })),
      ...Paging(1000, 100),
    }),
    responses: {
      200: { description: 'one page and the total', schema: Type.Object({ messages: Type.Array(QuarantinedMessage), total: Type.Integer() }) },
      400: { description: 'invalid filter', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, query }) => {
      const date = (v: string | undefined, field: string) => {
        if (v === undefined) return undefined;
        const ms = Date.parse(v);
        if (Number.isNaN(ms)) throw badRequest(`${field}: not an ISO 8601 date-time`);
        return ms;
      };
      let recipient: string | undefined;
      if (query.recipient !== undefined) {
        recipient = normaliseEmail(query.recipient) ?? undefined;
        if (!recipient) throw badRequest(`recipient: "${query.recipient}" is not a valid e-mail address`);
      }
      const page = await s.quarantine.list(
        {
          accountId: principal.account.id,
          keyId: principal.keyId,
          domain: query.domain === undefined ? undefined : domainOrBadRequest(query.domain, 'domain'),
          recipient,
          sender: query.sender,
          status: query.status,
          since: date(query.start_date, 'start_date'),
          until: date(query.end_date, 'end_date'),
          limit: query.limit ?? 100,
          offset: query.offset ?? 0,
        },
        s.now(),
      );
      return { status: 200, body: { messages: page.rows.map((r) => render(s, r)), total: page.total } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/quarantine/{id}',
    summary: 'One quarantined message with the verdict of every filtering step',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: IdParams,
    responses: {
      200: { description: 'the message', schema: QuarantinedDetail },
      400: { description: 'invalid id', schema: CodedError },
      404: { description: 'no such message of this account', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, params }) => {
      const row = await ownMessage(s, principal, Number(params.id));
      return { status: 200, body: { ...render(s, row), verdicts: row.verdicts } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/quarantine/{id}/raw',
    summary: 'The quarantined message as it would be relayed (RFC 5322, with our Authentication-Results)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: IdParams,
    responses: {
      200: { description: 'the raw message', schema: Type.String(), contentType: 'message/rfc822' },
      400: { description: 'invalid id', schema: CodedError },
      404: { description: 'no such message of this account', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, params }) => {
      const row = await ownMessage(s, principal, Number(params.id));
      const source = await s.quarantine.body(principal.account.id, row.id);
      if (!source) throw notFound(`quarantined message ${params.id} not found`);
      // Streamed from storage: a large quarantined message is never held whole to answer this.
      return { status: 200, body: source.open(), type: 'message/rfc822', headers: { 'Content-Length': String(source.size) } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/quarantine/{id}/release',
    summary: 'Release a message: relay it to its recipients\' downstream servers, once (a second release → 409); the classifier learns it as ham',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: IdParams,
    query: Type.Object(OneRecipient),
    responses: {
      200: { description: 'relayed (queued durably)', schema: QuarantinedMessage },
      400: { description: 'invalid id', schema: CodedError },
      404: { description: 'no such message of this account, or none held for recipient', schema: CodedError },
      409: { description: 'already released, being released, or its domain was deleted', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, params, query }) => {
      const only = onlyFor(await ownMessage(s, principal, Number(params.id)), query.recipient);
      const res = await releaseQuarantined(actionDeps(s), principal.account.id, Number(params.id), only);
      if (res.ok && res.learned === 'failed') s.logger.warn({ quarantineId: params.id }, 'classifier could not learn a released message as ham');
      if (res.ok) return { status: 200, body: render(s, res.row) };
      switch (res.reason) {
        case 'not-found':
          throw notFound(`quarantined message ${params.id} not found`);
        case 'released':
          throw conflict(`quarantined message ${params.id} was already released`);
        case 'in-progress':
          throw conflict(`quarantined message ${params.id} is being released`);
        case 'domain-gone':
          throw conflict(`the domain of quarantined message ${params.id} is no longer provisioned`);
        default:
          // The relay did not commit: nothing was queued, the message stays held; the client may retry.
          throw new ApiError(503, ['the message could not be queued for relay; try again later']);
      }
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/inbound/v1/quarantine/{id}',
    summary: 'Delete a quarantined message (it will never be relayed); with as_spam=true the classifier learns it as spam',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: IdParams,
    query: Type.Object({
      as_spam: Type.Optional(Type.Boolean({ default: false, description: 'teach the account\'s classifier model that the message is spam (with recipient: only when it was the last recipient)' })),
      ...OneRecipient,
    }),
    responses: {
      204: { description: 'deleted' },
      400: { description: 'invalid id', schema: CodedError },
      404: { description: 'no such message of this account, or none held for recipient', schema: CodedError },
      409: { description: 'a release of this message is in progress', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, params, query }) => {
      const only = onlyFor(await ownMessage(s, principal, Number(params.id)), query.recipient);
      const res = await deleteQuarantined(actionDeps(s), principal.account.id, Number(params.id), { asSpam: query.as_spam === true, ...(only ? { only } : {}) });
      if (!res.ok) {
        if (res.reason === 'not-found') throw notFound(`quarantined message ${params.id} not found`);
        throw conflict(`quarantined message ${params.id} is being released`);
      }
      if (res.learned === 'failed') s.logger.warn({ quarantineId: params.id }, 'classifier could not learn a deleted message as spam');
      return { status: 204 };
    },
  }),
];
