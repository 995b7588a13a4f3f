// Owns the Koa application: request ids, access log, auth, rate limits, validation, error shapes, 404/405.
import crypto from 'node:crypto';
import Router from '@koa/router';
import Koa from 'koa';
import { createTurns } from '../mta/event-loop-turns.js';
import { statusClass } from '../mta/metrics-labels.js';
import type { Metrics } from '../mta/metrics.js';
import type { KeyPrincipal } from '../storage/ports/accounts.js';
import { storageFailure } from '../storage/ports/health.js';
import { IdempotencyKeyTaken } from '../storage/ports/queue.js';
import { BufferBoundReached } from '../storage/message-source.js';
import { auditMiddleware } from './audit-middleware.js';
import { ApiError, errorBody, groupOf, noRoom, storageUnavailable } from './errors.js';
import { docsPage } from './docs-page.js';
import { htmlSecurityHeaders } from './html-headers.js';
import { hashBody, idempotencyKeyOf, replay, requestHash, type KeyedRequest } from './idempotency.js';
import { DEFAULT_BODY_LIMIT, readJsonBody, type JsonBody } from './json-body.js';
import { metricsMiddleware } from './metrics-endpoint.js';
import { SERVICE_VERSION_HEADER, SERVICE_VERSIONS } from './openapi.js';
import { createRateLimiter } from './rate-limit.js';
import { coerceQuery, validate, type AnyRoute, type Method } from './route.js';
import type { Services } from './services.js';

/** Requests per second (and burst) per account on rate-limited routes (OAS-I: 100 req/s per customer → 503). */
export const RATE_LIMIT_PER_SECOND = 100;

/** `/sub-account/{handle}` → `/sub-account/:handle` for @koa/router. */
function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

async function authenticate(route: AnyRoute, services: Services, header: string | string[] | undefined): Promise<KeyPrincipal> {
  const group = groupOf(route.path);
  // The tx API answers 403 for every key problem; inbound/outbound answer 401 for a missing or unknown key.
  const unauth = group === 'tx' ? 403 : 401;
  const key = Array.isArray(header) ? header[0] : header;
  if (!key) throw new ApiError(unauth, ['missing X-API-Key header']);
  const principal = await services.accounts.authenticateKey(key.trim());
  if (!principal) throw new ApiError(unauth, ['invalid or revoked API key']);
  if (principal.scope !== route.auth) {
    throw new ApiError(403, [`this API key has scope "${principal.scope}"; this endpoint needs scope "${route.auth}"`]);
  }
  return principal;
}

/** What the app serves besides the REST routes. */
export interface AppExtras {
  /** Counts every request by route template; serves GET /metrics here too when `metricsHere`. */
  metrics?: Metrics;
  metricsHere?: boolean;
  /** Mounted before the REST routes (the web console); they own their paths and their error pages. */
  middleware?: Koa.Middleware[];
  /**
   * Serving processes on the same listeners (server.processes, default 1). The request budgets below are buckets in
   * this process's memory; the kernel spreads connections evenly, so each process keeps 1/processes of each rate
   * (with a burst of at least one request) and the tree as a whole keeps to the configured rate.
   */
  processes?: number;
}

/** Builds the Koa app serving `routes`. */
export function createApp(services: Services, routes: readonly AnyRoute[], extras: AppExtras = {}): Koa {
  const app = new Koa();
  app.proxy = false;
  const router = new Router();
  const share = (rate: number) => ({ rate: rate / (extras.processes ?? 1), burst: Math.max(1, rate / (extras.processes ?? 1)), now: services.now });
  const limiter = createRateLimiter(share(RATE_LIMIT_PER_SECOND));
  // Send requests per account (issue 31), a second's worth as the burst like the bucket above; 0: no limit.
  const sendRate = services.config.send.ratePerSecond;
  const sendLimiter = sendRate > 0 ? createRateLimiter(share(sendRate)) : undefined;

  // Outermost: every HTML answer gets its CSP, error pages and redirect bodies included.
  app.use(htmlSecurityHeaders());
  // Outside the error handler below, so an entry carries the status the client got (issue 38: the audit log).
  app.use(auditMiddleware({ audit: services.audit, logger: services.logger, now: services.now }));
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    // The HTTP request's own id, answered as X-Request-Id; distinct from a send's MailChannels `request_id`.
    const httpRequestId = crypto.randomUUID();
    ctx.state.httpRequestId = httpRequestId;
    ctx.set('X-Request-Id', httpRequestId);
    const serviceVersion = SERVICE_VERSIONS[groupOf(ctx.path)];
    if (serviceVersion) ctx.set(SERVICE_VERSION_HEADER, serviceVersion);
    try {
      await next();
    } catch (thrown) {
      const group = groupOf(ctx.path);
      let err = thrown;
      const failure = storageFailure(err);
      if (failure) {
        services.logger.warn({ err, httpRequestId, reason: failure }, 'storage unavailable');
        err = storageUnavailable();
      }
      // A message that met smtp.max_buffered_bytes past the body (the queue's door reads it whole): nothing stored.
      if (err instanceof BufferBoundReached) err = noRoom('memory');
      if (err instanceof ApiError) {
        ctx.status = err.status;
        ctx.body = errorBody(group, err.status, err.errors);
        for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      } else {
        const status = (err as { status?: number; expose?: boolean }).status;
        if (status && status >= 400 && status < 500) {
          ctx.status = status;
          ctx.body = errorBody(group, status, [(err as Error).message]);
        } else {
          services.logger.error({ err, httpRequestId }, 'request failed');
          ctx.status = 500;
          ctx.body = errorBody(group, 500, ['internal error']);
        }
      }
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const principal = ctx.state.principal as KeyPrincipal | undefined;
      services.logger.info(
        {
          component: 'http',
          httpRequestId,
          // The send's `request_id` (queue and SMTP log rows), when the route made one: joins this line with them.
          sendRequestId: ctx.state.sendRequestId as string | undefined,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          account: principal?.account.handle,
        },
        'request',
      );
      // The route template, never the path: ids in paths would make a series per message.
      const route = (ctx.state.routeTemplate as string | undefined) ?? 'unmatched';
      extras.metrics?.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      extras.metrics?.httpDuration.observe({ method: ctx.method, route, status_class: statusClass(ctx.status) }, ms / 1000);
    }
  });
  if (extras.metrics && extras.metricsHere) app.use(metricsMiddleware(extras.metrics));
  // The API reference page (/docs), rendering /openapi.json.
  app.use(docsPage());
  for (const m of extras.middleware ?? []) app.use(m);

  /**
   * Runs one route's request: budgets, validation, the body, the handler, the answer. `keyed`: the request carries an
   * Idempotency-Key (issue 36): its body's bytes go into `hash`, and `read` says when they all have.
   */
  async function handle(
    ctx: Koa.Context,
    route: AnyRoute,
    principal: KeyPrincipal | undefined,
    keyed?: { request: KeyedRequest; hash: crypto.Hash; read: boolean; query: unknown },
  ) {
    if (principal) {
      if (route.rateLimited && !limiter.take(`${groupOf(route.path)}:${principal.account.id}`)) {
        throw new ApiError(503, ['rate limit exceeded: at most 100 requests per second'], { 'Retry-After': '1' });
      }
      // RFC 6585 §4: 429 Too Many Requests; a token comes back within 1/rate ≤ 1 s, so Retry-After is 1 (RFC 9110 §10.2.3).
      if (route.sendRateLimited && sendLimiter && !sendLimiter.take(`send:${principal.account.id}`)) {
        throw new ApiError(429, [`rate limit exceeded: at most ${sendRate} send requests per second per account`], { 'Retry-After': '1' });
      }
    }
    const params = route.params ? validate(route.params, { ...ctx.params }, 'path') : {};
    const query = keyed ? keyed.query : queryOf(ctx, route);
    let body: unknown = undefined;
    let read: JsonBody | undefined;
    try {
      if (route.body) {
        // queue.min_free_bytes (Postfix queue_minfree): refused before a byte of the message is read.
        // A free-space check that fails (statfs) answers as no room: unknown is temporary.
        const space = route.queuesMessages ? services.messageSpace : undefined;
        if (space && !(await space.hasRoom().catch(() => false))) {
          ctx.req.resume(); // drained, not kept: the connection stays usable for the answer
          throw noRoom('disk');
        }
        const scratch = services.messageSpace?.scratch;
        const keepOut = route.keepOut && scratch ? { ...route.keepOut, scratch } : undefined;
        read = await readJsonBody(ctx.req, route.bodyLimit ?? DEFAULT_BODY_LIMIT, services.messageSpace?.budget, keepOut, keyed?.hash);
        if (keyed) keyed.read = true;
        body = read.value;
        if (body === undefined && !route.bodyOptional) throw new ApiError(400, ['request body is required']);
        // A body of a thousand personalizations takes tens of milliseconds to check: when it did, the event loop
        // gets its turn before the handler goes on (issue 31); a small body's check does not yield.
        const turn = createTurns();
        if (body !== undefined) body = validate(route.body, body, 'body');
        await turn();
      }
      const reply = await route.handler(services, {
        params,
        query,
        body,
        diverted: read?.diverted ?? [],
        principal: principal as KeyPrincipal,
        httpRequestId: ctx.state.httpRequestId as string,
        headers: ctx.headers,
        ip: ctx.ip,
        method: ctx.method,
        querystring: ctx.querystring,
        ...(keyed ? { keyed: keyed.request } : {}),
      });
      ctx.status = reply.status;
      if (reply.sendRequestId !== undefined) ctx.state.sendRequestId = reply.sendRequestId;
      for (const [k, v] of Object.entries(reply.headers ?? {})) ctx.set(k, v);
      if (reply.body !== undefined) {
        if (reply.type) ctx.type = reply.type;
        ctx.body = reply.body;
      } else if (reply.status !== 204 && reply.status !== 304) {
        // The spec's bodiless answers (201 on POST /webhook and /suppression-list, 200 on GET /inbound/v1/status…)
        // declare no content: no body and no Content-Type (an empty string would be sent as text/plain). An explicit
        // null body is how Koa says so; it turns the status into 204 on the way, so the status is set again after.
        ctx.body = null;
        ctx.status = reply.status;
      }
    } finally {
      // The body's bytes count against smtp.max_buffered_bytes until the request is answered; its scratches go too.
      await read?.release();
    }
  }

  /** The route's query, coerced and checked (400 naming what is wrong). */
  function queryOf(ctx: Koa.Context, route: AnyRoute): unknown {
    return route.query ? validate(route.query, coerceQuery(route.query, ctx.query as Record<string, string | string[]>), 'query') : {};
  }

  /** Answers a stored answer again (Idempotent-Replayed: true). */
  const answerWith = (ctx: Koa.Context, a: ReturnType<typeof replay>) => {
    ctx.status = a.status;
    for (const [k, v] of Object.entries(a.headers)) ctx.set(k, v);
    ctx.type = 'application/json';
    ctx.body = a.body;
  };

  /**
   * A request with an Idempotency-Key (issue 36): one at a time per key in this process (409); a key holding an
   * answer replays it before any budget counts or anything is parsed; otherwise the request runs, and its answer is
   * kept in its commit (the handler's) or, for a refusal a retry would get again, after it.
   */
  async function handleKeyed(ctx: Koa.Context, route: AnyRoute, principal: KeyPrincipal, key: string, query: unknown) {
    const accountId = principal.account.id;
    const release = services.idempotency.begin(accountId, key);
    try {
      const hash = requestHash(ctx.method, ctx.path, ctx.querystring);
      const earlier = await services.idempotency.stored(accountId, key);
      if (earlier) return answerWith(ctx, replay(earlier, await hashBody(ctx.req, hash, route.bodyLimit ?? DEFAULT_BODY_LIMIT)));
      let digest: string | undefined;
      const keyed = { request: services.idempotency.keyed(accountId, key, () => (digest ??= hash.digest('hex'))), hash, read: false, query };
      try {
        await handle(ctx, route, principal, keyed);
      } catch (err) {
        // Another process or node committed the key's first request meanwhile: its answer, if this is the same request.
        if (err instanceof IdempotencyKeyTaken) {
          const taken = await services.idempotency.stored(accountId, key);
          if (taken) return answerWith(ctx, replay(taken, keyed.request.digest()));
        }
        if (err instanceof ApiError && keyed.read) {
          const earlier = await services.idempotency.keepRefusal(keyed.request, err.status, errorBody(groupOf(route.path), err.status, err.errors));
          if (earlier) return answerWith(ctx, replay(earlier, keyed.request.digest()));
        }
        throw err;
      }
    } finally {
      release();
    }
  }

  for (const route of routes) {
    const method = route.method.toLowerCase() as Lowercase<Method>;
    router[method](koaPath(route.path), async (ctx) => {
      ctx.state.routeTemplate = route.path;
      const principal = route.auth !== 'none' ? await authenticate(route, services, ctx.headers['x-api-key']) : undefined;
      ctx.state.principal = principal;
      const key = route.idempotent && principal ? idempotencyKeyOf(ctx.headers) : undefined;
      if (key !== undefined) {
        const query = queryOf(ctx, route);
        if (route.idempotent!(query)) return handleKeyed(ctx, route, principal!, key, query);
      }
      return handle(ctx, route, principal);
    });
  }

  app.use(router.routes());
  // Nothing matched: 405 with Allow when the path exists under another method, else 404 — both in the group's shape.
  app.use(async (ctx) => {
    const matched = router.match(ctx.path, ctx.method);
    const allowed = new Set<string>();
    for (const layer of matched.path) for (const m of layer.methods) if (m !== 'HEAD') allowed.add(m);
    if (allowed.size > 0 && !matched.route) {
      throw new ApiError(405, [`method ${ctx.method} not allowed; allowed: ${[...allowed].join(', ')}`], {
        Allow: [...allowed].join(', '),
      });
    }
    throw new ApiError(404, [`no route for ${ctx.method} ${ctx.path}`]);
  });
  return app;
}
