// Owns GET /metrics: the Prometheus text exposition, on its own loopback listener (http.metrics_listen) or on the
// HTTP listener when that key is "".
import Koa from 'koa';
import type { Metrics } from '../mta/metrics.js';

/** Answers GET (and HEAD) /metrics with the exposition; anything else passes on (`next`) or, alone, gets 404. */
export function metricsMiddleware(metrics: Metrics): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.state.routeTemplate = '/metrics';
    const { contentType, text } = await metrics.exposition();
    ctx.status = 200;
    ctx.type = contentType;
    // Scrapers must always see the current values.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = text;
  };
}

/** The dedicated metrics listener's app: /metrics and nothing else (404 in plain text). */
export function createMetricsApp(metrics: Metrics): Koa {
  const app = new Koa();
  app.use(metricsMiddleware(metrics));
  app.use((ctx) => {
    ctx.status = 404;
    ctx.type = 'text/plain';
    ctx.body = 'only /metrics is served here\n';
  });
  return app;
}
