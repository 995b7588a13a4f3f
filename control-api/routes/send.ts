// Owns POST /tx/v1/send and /tx/v1/send-async (api.md §2.1): translate the request, run the send recipe, answer.
import { Type } from '@sinclair/typebox';
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import { ApiError } from '../errors.js';
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
  400: { description: 'invalid request (the message names the field)', schema: TxError },
  403: {
    description:
      'key problem, From domain not authorized (Domain Lockdown), account suspended or over its monthly limit, sender identity blocked (delist with POST /outbound/v1/remediation), or (send-async) a message graded CONFIRMED spam or virus',
    schema: TxError,
  },
  413: { description: 'a composed message exceeds 30 MB', schema: TxError },
  500: { description: 'could not queue; nothing was accepted', schema: TxError },
  503: { description: 'a content scanner (rspamd, clamd) is down and filters.on_scanner_error is tempfail; nothing was queued', schema: TxError },
};

/** Seconds a client should wait after a scanner outage (503) before sending again. */
const SCANNER_RETRY_AFTER_SECONDS = 60;

/** A send that did not go through, as the tx group's error (503 with Retry-After). */
function sendError(status: number, messages: string[]): ApiError {
  return new ApiError(status, messages, status === 503 ? { 'Retry-After': String(SCANNER_RETRY_AFTER_SECONDS) } : {});
}

const tags = ['sending'];

export const sendRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/send-async',
    summary: 'Queue a message durably and answer at once',
    tags,
    auth: 'api',
    body: MailSendBody,
    bodyLimit: SEND_BODY_LIMIT,
    responses: {
      202: {
        description: 'queued (committed to disk)',
        schema: Type.Object({ queued_at: Type.String({ format: 'date-time' }), request_id: Type.String() }),
      },
      ...errors,
    },
    handler: async (s, { principal, body, ip }) => {
      const res = await s.send(principal.account, body, { dryRun: false, upstream: ip, auth: `api-key:${principal.keyId}` });
      if (!res.ok) throw sendError(res.status, res.errors);
      if (res.dryRun) throw new Error('unreachable: not a dry run');
      return {
        status: 202,
        body: { queued_at: new Date(res.queuedAt).toISOString(), request_id: res.sendRequestId },
        sendRequestId: res.sendRequestId,
      };
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
    responses: {
      200: { description: 'dry run: one rendered RFC 5322 message per personalization', schema: Type.Object({ data: Type.Array(Type.String()) }) },
      202: { description: 'queued (committed to disk); a message refused as CONFIRMED spam or virus is `failed` with its reason', schema: SendResults },
      ...errors,
    },
    handler: async (s, { principal, body, query, ip }) => {
      const dryRun = query['dry-run'] === true;
      const res = await s.send(principal.account, body, { dryRun, upstream: ip, auth: `api-key:${principal.keyId}`, perMessage: true });
      if (!res.ok) throw sendError(res.status, res.errors);
      if (res.dryRun) return { status: 200, body: { data: res.data } };
      return { status: 202, body: { request_id: res.sendRequestId, results: res.results }, sendRequestId: res.sendRequestId };
    },
  }),
];
