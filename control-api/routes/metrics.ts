// Owns GET /tx/v1/metrics/* (api.md §2.5): engagement, performance, recipient behaviour, volume and senders.
import { Type, type TSchema } from '@sinclair/typebox';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import type { Metric } from '../../storage/ports/metrics.js';
import {
  bucketStarts, buildReport, INTERVALS, isoTime, metricsWindow, rankSenders, REPORTS, senderTotals, type Interval, type ReportName,
} from '../../mta/queue/metrics.js';
import { badRequest, forbidden } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { Handle, Limit, Offset, parseWhen, TxError } from '../schemas.js';
import type { Services } from '../services.js';
import { ownSubAccount } from '../tenancy.js';

/** `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ` (fractions of a second accepted, as SDKs write them). */
const Time = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z)?$',
  errorMessage: 'must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ',
});

const window = {
  start_time: Type.Optional({
    ...Time,
    description: 'inclusive; default one calendar month before now (the same day and time; the last day of a shorter month); counted to the second',
  }),
  end_time: Type.Optional({ ...Time, description: 'exclusive; default now; counted to the second' }),
};

/**
 * What each counter counts (the OpenAPI description of its field): MailChannels' fields first, then Sluice's own
 * (machine_*, unique_human_*: the figures with machine traffic told apart).
 */
const FIELD_DOCS: Record<Metric, string> = {
  processed: 'recipients accepted for delivery',
  delivered: 'recipients delivered',
  bounced: 'recipients hard-bounced',
  dropped: 'recipients dropped before delivery (suppressed, refused)',
  complained: 'Sluice: spam complaints',
  unsubscribed: 'recipients who unsubscribed',
  unsubscribe_delivered: 'recipients delivered mail with a List-Unsubscribe header',
  open: 'open events (every hit of the pixel, machine traffic included)',
  unique_open: 'distinct messages with at least one open event (machine traffic included)',
  machine_open: 'Sluice: open events flagged as machine traffic (image proxies, scanners)',
  open_tracking_delivered: 'recipients delivered mail with open tracking',
  unique_open_tracking_delivered: 'distinct messages with open tracking delivered to at least one recipient',
  click: 'click events (machine traffic included)',
  unique_click: 'distinct messages with at least one click event (machine traffic included)',
  machine_click: 'Sluice: click events flagged as machine traffic (link scanners)',
  click_tracking_delivered: 'recipients delivered mail with click tracking',
  unique_click_tracking_delivered: 'distinct messages with click tracking delivered to at least one recipient',
  deferred: 'Sluice: deferred delivery attempts',
  unique_human_open: 'Sluice: distinct messages with at least one open not flagged as machine traffic',
  unique_human_click: 'Sluice: distinct messages with at least one click not flagged as machine traffic',
};

const subAccount = {
  sub_account: Type.Optional({
    ...Handle,
    description: 'Sluice extension, parent keys only: the figures of this sub-account alone (default: the parent with all its sub-accounts)',
  }),
};

const MetricsQuery = Type.Object({
  ...window,
  campaign_id: Type.Optional(Type.String({ minLength: 1, maxLength: 48, pattern: '^\\S+$', errorMessage: 'must be 1-48 characters without whitespace' })),
  interval: Type.Optional(
    Type.Union(INTERVALS.map((i) => Type.Literal(i)), { default: 'day', errorMessage: `must be one of ${INTERVALS.join(', ')}` }),
  ),
  ...subAccount,
});

const Bucket = Type.Object({ count: Type.Integer({ minimum: 0 }), period_start: Type.String({ format: 'date-time' }) });

function reportSchema(fields: readonly Metric[]): TSchema {
  const counts = Object.fromEntries(fields.map((f) => [f, Type.Integer({ minimum: 0, description: FIELD_DOCS[f] })]));
  return Type.Object({
    ...counts,
    start_time: Type.String({ format: 'date-time', description: 'the window counted: start_time as given (or its default) unless its hour had no per-second detail left, then that hour\'s start' }),
    end_time: Type.String({ format: 'date-time', description: 'the window counted, exclusive: end_time as given (or now) unless its hour had no per-second detail left, then that hour\'s end' }),
    buckets: Type.Object(Object.fromEntries(fields.map((f) => [f, Type.Array(Bucket)]))),
  });
}

/** The account whose figures are asked: the caller (a parent: with its sub-accounts), or one sub-account of it. */
async function subject(s: Services, principal: KeyPrincipal, subHandle: string | undefined): Promise<number> {
  if (subHandle === undefined) return principal.account.id;
  if (principal.account.parent_id !== null) throw forbidden('sub_account: only a parent account key can ask for a sub-account');
  return (await ownSubAccount(s, principal, subHandle)).id;
}

function windowOf(s: Services, q: { start_time?: string; end_time?: string }) {
  const w = metricsWindow(s.now(), parseWhen('start_time', q.start_time), parseWhen('end_time', q.end_time));
  if (!w.ok) throw badRequest(w.error);
  return w.window;
}

const tags = ['metrics'];
const errors = {
  400: { description: 'invalid query (the message names the parameter)', schema: TxError },
  403: { description: 'key problem, or sub_account with a sub-account key', schema: TxError },
  404: { description: 'sub_account is not a sub-account of this account', schema: TxError },
};

const SUMMARIES: Record<ReportName, string> = {
  engagement: 'Opens and clicks, with the deliveries of tracked mail (unique_*: each message once; machine_*: flagged machine traffic; unique_human_*: each message once, machine traffic left out)',
  performance: 'Processed, delivered and bounced recipients (and complaints)',
  'recipient-behaviour': 'Unsubscriptions, and deliveries of mail with List-Unsubscribe',
  volume: 'Processed, delivered and dropped recipients',
};

const reportRoutes: AnyRoute[] = (Object.keys(REPORTS) as ReportName[]).map((name) =>
  defineRoute({
    method: 'GET',
    path: `/tx/v1/metrics/${name}`,
    summary: SUMMARIES[name],
    tags,
    auth: 'api',
    query: MetricsQuery,
    responses: { 200: { description: 'figures of the window, and one bucket per interval period (zeros included)', schema: reportSchema(REPORTS[name]) }, ...errors },
    handler: async (s, { principal, query }) => {
      const accountId = await subject(s, principal, query.sub_account);
      const w = windowOf(s, query);
      const interval = (query.interval ?? 'day') as Interval;
      const starts = bucketStarts(w, interval);
      if (!starts.ok) throw badRequest(starts.error);
      const body = await buildReport(s.metrics, {
        accountId,
        campaign: query.campaign_id ?? null,
        window: w,
        interval,
        starts: starts.starts,
        fields: REPORTS[name],
      });
      return { status: 200, body };
    },
  }),
);

const Sender = Type.Object({
  name: Type.String({ maxLength: 255 }),
  processed: Type.Integer({ minimum: 0 }),
  delivered: Type.Integer({ minimum: 0 }),
  bounced: Type.Integer({ minimum: 0 }),
  dropped: Type.Integer({ minimum: 0 }),
});

export const metricsRoutes: AnyRoute[] = [
  ...reportRoutes,
  defineRoute({
    method: 'GET',
    path: '/tx/v1/metrics/senders/{sender_type}',
    summary: 'Campaigns, or a parent\'s sub-accounts, ranked by processed + dropped (senders without traffic omitted)',
    tags,
    auth: 'api',
    params: Type.Object({
      sender_type: Type.Union([Type.Literal('campaigns'), Type.Literal('sub-accounts')], { errorMessage: 'must be campaigns or sub-accounts' }),
    }),
    query: Type.Object({
      ...window,
      limit: Limit(1000, 10),
      offset: Offset(),
      sort_order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc', errorMessage: 'must be asc or desc' })),
      ...subAccount,
    }),
    responses: {
      200: {
        description: 'one page of senders',
        schema: Type.Object({
          start_time: Type.String({ format: 'date-time' }),
          end_time: Type.String({ format: 'date-time' }),
          limit: Type.Integer(),
          offset: Type.Integer(),
          total: Type.Integer(),
          senders: Type.Array(Sender),
        }),
      },
      ...errors,
    },
    handler: async (s, { principal, params, query }) => {
      if (params.sender_type === 'sub-accounts' && query.sub_account !== undefined) {
        throw badRequest('sub_account: not with sender_type sub-accounts (it ranks the sub-accounts themselves)');
      }
      const accountId = await subject(s, principal, query.sub_account);
      const asked = windowOf(s, query);
      // A sub-account has no sub-accounts of its own: its ranking is empty.
      const { rows, window: w } = params.sender_type === 'campaigns'
        ? await senderTotals(s.metrics, 'campaigns', accountId, asked)
        : principal.account.parent_id === null ? await senderTotals(s.metrics, 'subAccounts', accountId, asked) : { rows: [], window: asked };
      const limit = query.limit ?? 10;
      const offset = query.offset ?? 0;
      const ranked = rankSenders(rows, { limit, offset, order: query.sort_order ?? 'desc' });
      return { status: 200, body: { start_time: isoTime(w.start), end_time: isoTime(w.end), limit, offset, ...ranked } };
    },
  }),
];
