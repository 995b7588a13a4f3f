// Owns the control plane's HTTP app: every REST route group in one list, the meta routes (/healthz, /readyz,
// /openapi.json) over them, and the web console mounted before them, calling those same routes' handlers.
import type { Config } from '../config/load.js';
import { createApp } from '../control-api/app.js';
import { createConsole } from '../control-api/console/router.js';
import { acmeRoutes } from '../control-api/routes/acme.js';
import { auditRoutes } from '../control-api/routes/audit.js';
import { checkDomainRoutes } from '../control-api/routes/check-domain.js';
import { dkimKeyRoutes } from '../control-api/routes/dkim-keys.js';
import { inboundDomainRoutes } from '../control-api/routes/inbound-domains.js';
import { inboundListRoutes } from '../control-api/routes/inbound-lists.js';
import { inboundLogRoutes } from '../control-api/routes/inbound-log.js';
import { inboundQuarantineRoutes } from '../control-api/routes/inbound-quarantine.js';
import { inboundServiceRoutes } from '../control-api/routes/inbound-service.js';
import { inboundStatusRoutes } from '../control-api/routes/inbound-status.js';
import { inboundUserRoutes } from '../control-api/routes/inbound-users.js';
import { metaRoutes } from '../control-api/routes/meta.js';
import { metricsRoutes } from '../control-api/routes/metrics.js';
import { monitorRoutes } from '../control-api/routes/monitors.js';
import { outboundAbuseRoutes } from '../control-api/routes/outbound-abuse.js';
import { outboundSearchRoutes } from '../control-api/routes/outbound-search.js';
import { sendRoutes } from '../control-api/routes/send.js';
import { subAccountRoutes } from '../control-api/routes/sub-accounts.js';
import { suppressionRoutes } from '../control-api/routes/suppressions.js';
import { trackingDomainRoutes } from '../control-api/routes/tracking-domains.js';
import { trackingRoutes } from '../control-api/routes/tracking.js';
import { unsubscribeRoutes } from '../control-api/routes/unsubscribe.js';
import { webhookRoutes } from '../control-api/routes/webhooks.js';
import type { Services } from '../control-api/services.js';
import type { Metrics } from '../mta/metrics.js';
import { VERSION } from './version.js';

/** The REST routes Sluice serves, in the order they are matched. */
export const ROUTES = [
  ...subAccountRoutes,
  ...outboundSearchRoutes,
  ...outboundAbuseRoutes,
  ...monitorRoutes,
  ...auditRoutes,
  ...suppressionRoutes,
  ...dkimKeyRoutes,
  ...sendRoutes,
  ...checkDomainRoutes,
  ...unsubscribeRoutes,
  ...inboundDomainRoutes,
  ...inboundListRoutes,
  ...inboundUserRoutes,
  ...inboundServiceRoutes,
  ...inboundStatusRoutes,
  ...inboundQuarantineRoutes,
  ...inboundLogRoutes,
  ...webhookRoutes,
  ...trackingDomainRoutes,
  ...metricsRoutes,
  ...trackingRoutes,
  ...acmeRoutes,
];

/**
 * The Koa app of http.listen on `services`: the console, the REST routes and the meta routes; `metrics` counts every
 * request (and is served here when http.metrics_listen is empty). `processes` share the per-process request budgets.
 */
export function wireApp(services: Services, o: { config: Config; metrics: Metrics; processes: number }) {
  return createApp(services, [...ROUTES, ...metaRoutes(ROUTES, VERSION)], {
    metrics: o.metrics,
    metricsHere: o.config.http.metricsListen === undefined,
    processes: o.processes,
    // The web console calls these same routes' handlers: no second path to the data.
    middleware: [createConsole(services, ROUTES)],
  });
}
