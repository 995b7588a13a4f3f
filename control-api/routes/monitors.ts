// Owns /tx/v1/monitors (a Sluice extension): alert monitors of an account — create, list, show, delete — and the
// alerts each fired.
import { Type } from '@sinclair/typebox';
import { ALERT_CONDITION_NAMES, ALERT_CONDITIONS, MAX_INTERVAL_HOURS, MIN_INTERVAL_HOURS, type AlertCondition } from '../../filters/alert-conditions.js';
import { normalizeAddress } from '../../mta/outbound/mailbox.js';
import { domainOf } from '../../mta/smtp/address.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { AlertRow, MonitorRow } from '../../storage/ports/alerts.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { lockdownError } from '../outbound-answers.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, Limit, TxError } from '../schemas.js';
import type { Services } from '../services.js';
import { checkEndpoint, screenEndpoint } from './webhooks.js';

/** Monitors one account may have. */
export const MAX_MONITORS = 100;

/** How a monitor created without `delivery` delivers its alerts. */
export const DEFAULT_DELIVERY = 'email';

const tags = ['monitors'];
const keyProblem = { 403: { description: 'missing, unknown or wrong-scope key', schema: TxError } };
const missing = { 404: { description: 'no such monitor of this account', schema: TxError } };

const Condition = Type.Union(
  ALERT_CONDITION_NAMES.map((c) => Type.Literal(c)),
  { errorMessage: `must be one of ${ALERT_CONDITION_NAMES.join(', ')}`, description: 'the condition watched' },
);

const Monitor = Type.Object({
  id: Type.Integer(),
  condition: Condition,
  condition_description: Type.String(),
  interval_hours: Type.Integer({ minimum: MIN_INTERVAL_HOURS, maximum: MAX_INTERVAL_HOURS }),
  delivery: Type.Union([Type.Literal('webhook'), Type.Literal('email')]),
  webhook_url: Type.Optional(Type.String()),
  email: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
});

const NewMonitor = Type.Object(
  {
    condition: Condition,
    interval_hours: BoundedInteger(MIN_INTERVAL_HOURS, MAX_INTERVAL_HOURS, {
      errorMessage: `must be an integer from ${MIN_INTERVAL_HOURS} to ${MAX_INTERVAL_HOURS}`,
      description: 'at most one alert per condition and sender identity per this many hours',
    }),
    // The specification: "delivery type is email (default) or webhook".
    delivery: Type.Optional(Type.Union([Type.Literal('webhook'), Type.Literal('email')], {
      default: DEFAULT_DELIVERY,
      errorMessage: 'must be "webhook" or "email"',
      description: 'email (default): a message through the outbound queue; webhook: a signed POST of the alert payload (label sig1)',
    })),
    webhook_url: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL; required for delivery webhook' })),
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'address; required for delivery email' })),
  },
  { additionalProperties: false },
);

const Alert = Type.Object({
  id: Type.Integer(),
  fired_at: Type.String({ format: 'date-time' }),
  sender_id: Type.String(),
  state: Type.Union(['pending', 'sending', 'delivered', 'failed'].map((s) => Type.Literal(s))),
  attempts: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  payload: Type.Record(Type.String(), Type.String(), { description: 'the alert notification as sent (api.md §4.5)' }),
});

const IdParams = Type.Object({ id: Type.String() });

function monitorId(raw: string): number {
  const n = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(n) || n < 1) throw badRequest('id: must be a positive integer id');
  return n;
}

export function renderMonitor(m: MonitorRow) {
  return {
    id: m.id,
    condition: m.condition as AlertCondition,
    condition_description: ALERT_CONDITIONS[m.condition as AlertCondition] ?? m.condition,
    interval_hours: m.interval_hours,
    delivery: m.delivery,
    ...(m.delivery === 'webhook' ? { webhook_url: m.target } : { email: m.target }),
    created_at: new Date(m.created_at).toISOString(),
  };
}

export function renderAlert(a: AlertRow) {
  return {
    id: a.id,
    fired_at: new Date(a.fired_at).toISOString(),
    sender_id: a.sender_id,
    state: a.state,
    attempts: a.attempts,
    last_status_code: a.last_status_code,
    last_error: a.last_error,
    payload: JSON.parse(a.payload) as Record<string, string>,
  };
}

/**
 * The delivery target of a new monitor: the webhook URL (checked like POST /tx/v1/webhook's) or the email address,
 * exactly the one the delivery needs — the other field given is a 400, never ignored.
 */
export function monitorTarget(b: { delivery: 'webhook' | 'email'; webhook_url?: string | undefined; email?: string | undefined }): string {
  if (b.delivery === 'webhook') {
    if (b.email !== undefined) throw badRequest('email: only for delivery "email"');
    if (b.webhook_url === undefined) throw badRequest('webhook_url: required for delivery "webhook"');
    try {
      return checkEndpoint(b.webhook_url);
    } catch {
      throw badRequest('webhook_url: must be an absolute http or https URL without credentials, at most 8000 characters');
    }
  }
  if (b.webhook_url !== undefined) throw badRequest('webhook_url: only for delivery "webhook"');
  if (b.email === undefined) throw badRequest('email: required for delivery "email"');
  const addr = normalizeAddress(b.email.trim());
  if (!addr) throw badRequest('email: not a valid email address');
  return addr.address;
}

/**
 * Alerts go by email only to an address on a domain the account may send from (Domain Lockdown, like a From
 * domain), so a monitor cannot mail a stranger text its tenant chose: 403 naming the domain and how to authorize it;
 * 503 with Retry-After when the look-up failed (DNS). The operator's `sluice monitors create` is not checked here;
 * delivery checks every email alert again (mta/jobs/alert-monitors.ts).
 */
async function mayAlertByEmail(s: Services, account: AccountRow, address: string): Promise<void> {
  const domain = domainOf(address);
  const verdict = await s.lockdown(domain, account);
  if (verdict.action !== 'pass') throw lockdownError(verdict, domain, account.handle, 'email: alerts go only to a domain this account may send from; ');
}

export const monitorRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/monitors',
    summary: 'Sluice extension: create an alert monitor (a parent account\'s monitors also watch its sub-accounts)',
    tags,
    auth: 'api',
    body: NewMonitor,
    responses: {
      201: { description: 'the monitor', schema: Monitor },
      400: {
        description: 'invalid condition, interval or delivery target (without delivery: email, so email is required; a webhook_url resolving to an internal address too)',
        schema: TxError,
      },
      403: {
        description: 'missing, unknown or wrong-scope key; or an email address on a domain the account may not send from (Domain Lockdown)',
        schema: TxError,
      },
      503: { description: 'the Domain Lockdown look-up of the email domain failed (DNS); with Retry-After', schema: TxError },
      409: { description: `the account already has ${MAX_MONITORS} monitors`, schema: TxError },
    },
    handler: async (s, { principal, body }) => {
      const delivery = body.delivery ?? DEFAULT_DELIVERY;
      const target = monitorTarget({ ...body, delivery });
      if (delivery === 'webhook') await screenEndpoint(s, target, 'webhook_url');
      if (delivery === 'email') await mayAlertByEmail(s, principal.account, target);
      if ((await s.alerts.listMonitors(principal.account.id)).length >= MAX_MONITORS) {
        throw conflict(`an account has at most ${MAX_MONITORS} monitors; delete one first`);
      }
      const m = await s.alerts.createMonitor({
        accountId: principal.account.id,
        condition: body.condition,
        intervalHours: body.interval_hours,
        delivery,
        target,
        now: s.now(),
      });
      return { status: 201, body: renderMonitor(m) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/monitors',
    summary: 'Sluice extension: the alert monitors of this account',
    tags,
    auth: 'api',
    responses: { 200: { description: 'monitors, oldest first', schema: Type.Array(Monitor) }, ...keyProblem },
    handler: async (s, { principal }) => ({ status: 200, body: (await s.alerts.listMonitors(principal.account.id)).map(renderMonitor) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/monitors/{id}',
    summary: 'Sluice extension: one alert monitor',
    tags,
    auth: 'api',
    params: IdParams,
    responses: { 200: { description: 'the monitor', schema: Monitor }, 400: { description: 'bad id', schema: TxError }, ...keyProblem, ...missing },
    handler: async (s, { principal, params }) => {
      const m = await s.alerts.findMonitor(principal.account.id, monitorId(params.id));
      if (!m) throw notFound(`no monitor ${params.id}`);
      return { status: 200, body: renderMonitor(m) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/monitors/{id}/alerts',
    summary: 'Sluice extension: the alerts a monitor fired, newest first, with their delivery state',
    tags,
    auth: 'api',
    params: IdParams,
    query: Type.Object({ limit: Limit(1000, 100) }),
    responses: { 200: { description: 'alerts', schema: Type.Array(Alert) }, 400: { description: 'bad id or limit', schema: TxError }, ...keyProblem, ...missing },
    handler: async (s, { principal, params, query }) => {
      const m = await s.alerts.findMonitor(principal.account.id, monitorId(params.id));
      if (!m) throw notFound(`no monitor ${params.id}`);
      const rows = await s.alerts.listAlerts({ accountId: principal.account.id, monitorId: m.id, limit: query.limit ?? 100 });
      return { status: 200, body: rows.map(renderAlert) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/monitors/{id}',
    summary: 'Sluice extension: delete an alert monitor (the alerts it fired stay counted)',
    tags,
    auth: 'api',
    params: IdParams,
    responses: { 204: { description: 'deleted' }, 400: { description: 'bad id', schema: TxError }, ...keyProblem, ...missing },
    handler: async (s, { principal, params }) => {
      if (!await s.alerts.deleteMonitor(principal.account.id, monitorId(params.id))) throw notFound(`no monitor ${params.id}`);
      return { status: 204 };
    },
  }),
];
