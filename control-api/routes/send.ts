// Owns POST /tx/v1/send and /tx/v1/send-async (api.md §2.1): translate the request, run the outbound recipe, answer
// its verdict (refusals through control-api/outbound-answers.ts).
import { Type } from '@sinclair/typebox';
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import type { AcceptVerdict, MessageOutcome } from '../../mta/outbound/outbound-verdict.js';
import type { KeptValue, KeptValues } from '../../mta/outbound/send-request.js';
import type { Diverted, JsonPath } from '../json-stream.js';
import { refusalError } from '../outbound-answers.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { TxError } from '../schemas.js';
import { MailSendBody } from '../send-schema.js';

/**
 * JSON bodies of send requests carry base64 attachments: the largest message (MAX_MESSAGE_BYTES, 30 MB) is 4/3 of
 * that in base64 (40 MB), plus 8 MB for the JSON around it (48 MB).
 */
export const SEND_BODY_LIMIT = (MAX_MESSAGE_BYTES / 3) * 4 + 8 * 1024 * 1024;

const SendResults = Type.Object({
  request_id: Type.String(),
  results: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message_id: Type.String(),
      status: Type.Union([Type.Literal('sent'), Type.Literal('failed')]),
      reason: Type.Optional(Type.String()),
    }),
  ),
});

const errors = {
  400: { description: 'invalid request (the message names the field), or more recipients than send.max_recipients (to, cc and bcc of every personalization together; default 1,000)', schema: TxError },
  403: {
    description:
      'key problem, a domain not authorized (Domain Lockdown: From, envelope_from, dkim_domain, Resent-From, Resent-Sender), account suspended or over its monthly limit, sender identity blocked (delist with POST /outbound/v1/remediation), or (send-async) a message graded CONFIRMED spam or virus',
    schema: TxError,
  },
  413: { description: 'a composed message exceeds 30 MB', schema: TxError },
  429: {
    description: 'more send requests per second than the account may make (send.rate_per_second; /send, dry runs included, and /send-async count together), with Retry-After; nothing was read or queued',
    schema: TxError,
  },
  500: { description: 'could not queue; nothing was accepted', schema: TxError },
  503: {
    description:
      'temporary, with Retry-After: the Domain Lockdown DNS look-up failed, or a content scanner (rspamd, clamd) is down and filters.on_scanner_error is tempfail; nothing was queued',
    schema: TxError,
  },
};

/** The message outcomes of an accepted send as POST /send's `results` (MailChannels' wire names). */
function results(messages: MessageOutcome[]) {
  return messages.map((m) => {
    const reason = m.outcome === 'refused' ? m.refusal?.reason : m.outcome === 'suppressed' ? 'every recipient is on the suppression list' : undefined;
    return { index: m.index, message_id: m.messageId, status: reason ? ('failed' as const) : ('sent' as const), ...(reason ? { reason } : {}) };
  });
}

/** POST /send-async's answer (also what an Idempotency-Key keeps, made before the commit). */
const queuedBody = (v: AcceptVerdict) => ({ queued_at: new Date(v.queuedAt).toISOString(), request_id: v.sendRequestId });
/** POST /send's answer, likewise. */
const sentBody = (v: AcceptVerdict) => ({ request_id: v.sendRequestId, results: results(v.messages) });

const tags = ['sending'];

/**
 * The strings of a send body that may be long: text content (kept as UTF-8; whether it names the unsubscribe
 * placeholder is noted, it is then read back to be replaced) and attachments (their base64 decoded as it arrives,
 * RFC 4648 §4, its validity noted). Only array members by index: anything else is not where the schema allows them.
 */
const keepOut = {
  divert: (path: JsonPath) => {
    if (path.length !== 3 || typeof path[1] !== 'number') return undefined;
    if (path[0] === 'content' && path[2] === 'value') return 'text' as const;
    if (path[0] === 'attachments' && path[2] === 'content') return 'base64' as const;
    return undefined;
  },
  watch: 'mc-unsubscribe-url',
};

/** The diverted strings of a body that passed the schema, as the send request's kept values (index → scratch). */
function keptValues(diverted: readonly Diverted[]): KeptValues | undefined {
  if (diverted.length === 0) return undefined;
  const content = new Map<number, KeptValue>();
  const attachments = new Map<number, KeptValue>();
  for (const d of diverted) {
    const i = d.path[1] as number;
    if (d.kind === 'text') content.set(i, { source: d.scratch, placeholder: d.watched });
    else attachments.set(i, { source: d.scratch, invalid: d.invalid });
  }
  return { content, attachments };
}

export const sendRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/send-async',
    summary: 'Queue a message durably and answer at once',
    tags,
    auth: 'api',
    body: MailSendBody,
    bodyLimit: SEND_BODY_LIMIT,
    keepOut,
    queuesMessages: true,
    sendRateLimited: true,
    responses: {
      202: {
        description: 'queued (committed to disk)',
        schema: Type.Object({ queued_at: Type.String({ format: 'date-time' }), request_id: Type.String() }),
      },
      ...errors,
    },
    idempotent: () => true,
    handler: async (s, { principal, body, diverted, ip, keyed }) => {
      const kept = keptValues(diverted);
      const answer = keyed ? (v: AcceptVerdict) => keyed.answer(202, queuedBody(v)) : undefined;
      const v = await s.send(principal.account, body, { dryRun: false, upstream: ip, auth: `api-key:${principal.keyId}`, ...(kept ? { kept } : {}), ...(answer ? { answer } : {}) });
      if (v.action === 'render') throw new Error('unreachable: not a dry run');
      if (v.action !== 'accept') throw refusalError(v, principal.account.handle);
      return { status: 202, body: queuedBody(v), sendRequestId: v.sendRequestId };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/send',
    summary: 'Send a message (202 with per-personalization results), or render it with ?dry-run=true (200)',
    tags,
    auth: 'api',
    query: Type.Object({ 'dry-run': Type.Optional(Type.Boolean({ default: false })) }),
    body: MailSendBody,
    bodyLimit: SEND_BODY_LIMIT,
    keepOut,
    queuesMessages: true,
    sendRateLimited: true,
    responses: {
      200: { description: 'dry run: one rendered RFC 5322 message per personalization', schema: Type.Object({ data: Type.Array(Type.String()) }) },
      202: { description: 'queued (committed to disk); a message refused as CONFIRMED spam or virus is `failed` with its reason', schema: SendResults },
      ...errors,
    },
    // A dry run queues nothing, so its key keeps nothing: each one renders again.
    idempotent: (query) => query['dry-run'] !== true,
    handler: async (s, { principal, body, diverted, query, ip, keyed }) => {
      const dryRun = query['dry-run'] === true;
      const kept = keptValues(diverted);
      const answer = keyed ? (v: AcceptVerdict) => keyed.answer(202, sentBody(v)) : undefined;
      const v = await s.send(principal.account, body, { dryRun, upstream: ip, auth: `api-key:${principal.keyId}`, perMessage: true, ...(kept ? { kept } : {}), ...(answer ? { answer } : {}) });
      if (v.action === 'render') return { status: 200, body: { data: v.messages.map((raw) => raw.toString('utf8')) } };
      if (v.action !== 'accept') throw refusalError(v, principal.account.handle);
      return { status: 202, body: sentBody(v), sendRequestId: v.sendRequestId };
    },
  }),
];
