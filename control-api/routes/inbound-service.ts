// Owns GET /inbound/v1/subscriptions and POST /inbound/v1/report (api.md §5): plans an account may provision
// against, and false positive / negative reports stored for the operator.
import { Type } from '@sinclair/typebox';
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import { LEARN_SAMPLE_BYTES, learnSampleOfText } from '../../mta/message-content.js';
import { badRequest } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError } from '../schemas.js';

const Subscription = Type.Object({
  handle: Type.String(),
  active: Type.Boolean(),
  plan: Type.Object({ handle: Type.String(), name: Type.String() }),
  limits: Type.Array(Type.Object({ featureHandle: Type.String(), value: Type.String() })),
  activeAccountsCount: Type.Integer({ description: 'domains this account has provisioned against it' }),
});

const common = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  403: { description: 'wrong key scope', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};

/** Reported messages may be as large as accepted mail (MAX_MESSAGE_BYTES, 30 MB) plus 10 MB for JSON escaping (40 MB). */
const REPORT_BODY_LIMIT = MAX_MESSAGE_BYTES + 10 * 1024 * 1024;

// RFC 5322 §2.2 / §3.6.8: a message starts with a header field "name: value"; the header ends at the first empty
// line (or at the end when there is no body).
const FIRST_FIELD = /^[!-9;-~]+:/;

/**
 * Bytes of a report kept for the operator: its first LEARN_SAMPLE_BYTES (320 KiB), the header section and the start
 * of the body the classifier learns from, enough to judge a filtering mistake. One synchronous SQLite write of a
 * whole 40 MB report held the event loop for over a second (15-40 ms per MiB measured), and reports from one key
 * filled data_dir (issue 31).
 */
export const REPORT_KEEP_BYTES = LEARN_SAMPLE_BYTES;

/** The first `max` bytes of `text` in UTF-8, cut between characters (encodeInto writes whole characters only). */
function keptPart(text: string, max: number): string {
  if (text.length * 3 <= max) return text;
  const { read } = new TextEncoder().encodeInto(text, new Uint8Array(max));
  return text.slice(0, read);
}

export const inboundServiceRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/subscriptions',
    summary: 'Subscriptions (operator-defined plans) this account may provision domains against',
    tags: ['inbound-service'],
    auth: 'inbound',
    rateLimited: true,
    responses: { 200: { description: 'subscriptions', schema: Type.Array(Subscription) }, ...common },
    handler: async (s, { principal }) => ({
      status: 200,
      body: (await s.inboundDomains.listSubscriptions(principal.account.id)).map((sub) => ({
        handle: sub.handle,
        active: sub.active,
        plan: { handle: sub.plan_handle, name: sub.plan_name },
        limits: sub.limits,
        activeAccountsCount: sub.domain_count,
      })),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/report',
    summary: 'Report a false positive or false negative; the message (its first 320 KiB) is stored for the operator and the account\'s classifier learns it (ham or spam)',
    tags: ['inbound-service'],
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({
      report_type: Type.Union([Type.Literal('false_positive'), Type.Literal('false_negative')], {
        errorMessage: 'must be false_positive or false_negative',
      }),
    }),
    body: Type.Object({
      messageContent: Type.String({ minLength: 1, description: 'the full message (RFC 5322), without dot-stuffing' }),
      smtpEnvelopeInformation: Type.Optional(
        Type.Object({
          ehlo: Type.Optional(Type.String({ maxLength: 255 })),
          mailFrom: Type.Optional(Type.String({ maxLength: 320 })),
          rcptTo: Type.Optional(Type.String({ maxLength: 320 })),
        }),
      ),
      sendingHostInformation: Type.Optional(Type.Object({ name: Type.Optional(Type.String({ maxLength: 255 })) })),
    }),
    bodyLimit: REPORT_BODY_LIMIT,
    // Reports are stored on data_dir's disk like queued mail: refused below queue.min_free_bytes, so one tenant's
    // reports cannot take the room every tenant's mail needs.
    queuesMessages: true,
    responses: {
      204: { description: 'stored' },
      400: { description: 'missing report_type or not an RFC 5322 message', schema: CodedError },
      ...common,
      503: { description: 'rate limit (100 requests per second per account), or data_dir\'s disk below queue.min_free_bytes (with Retry-After)', schema: CodedError },
    },
    handler: async (s, { principal, query, body }) => {
      if (!FIRST_FIELD.test(body.messageContent)) {
        throw badRequest('messageContent: not an RFC 5322 message (it must start with a header field)');
      }
      await s.inboundReports.insertReport({
        account_id: principal.account.id,
        api_key_id: principal.keyId,
        report_type: query.report_type,
        message_content: keptPart(body.messageContent, REPORT_KEEP_BYTES),
        size: Buffer.byteLength(body.messageContent, 'utf8'),
        ehlo: body.smtpEnvelopeInformation?.ehlo ?? null,
        mail_from: body.smtpEnvelopeInformation?.mailFrom ?? null,
        rcpt_to: body.smtpEnvelopeInformation?.rcptTo ?? null,
        sending_host: body.sendingHostInformation?.name ?? null,
        created_at: s.now(),
      }, s.config.inbound.reportsPerAccount);
      // A false positive is mail the customer wanted (ham); a false negative is spam we let through. The classifier
      // learns the sample it would judge (a quarantine decision learns as much), not all of a report up to 40 MB.
      const cls = query.report_type === 'false_positive' ? 'ham' : 'spam';
      const raw = learnSampleOfText(body.messageContent);
      const item = await s.bayes.prepare(raw, cls);
      await s.bayes.learn(principal.account.id, [item], s.now());
      // Where the global model learned this message by itself (autolearn), the report corrects it there too.
      await s.bayes.correct(null, [item], s.now());
      return { status: 204 };
    },
  }),
];
