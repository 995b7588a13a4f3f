// Owns recording the API's changes in the audit log (issue 38 item 3): one Koa middleware, outermost but for the
// security headers, so it sees each mutating request's final status, and the console's route calls (call-route.ts).
import type Koa from 'koa';
import type { AuditEntry, AuditStore } from '../storage/ports/audit.js';
import type { KeyPrincipal } from '../storage/ports/accounts.js';
import type { Logger } from 'pino';

/** RFC 9110 §9.2.1: the methods that are not safe, i.e. may change something. */
export const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Unsafe requests that change nothing an operator audits: a send queues mail (each message is in the SMTP log, and a
 * busy sender would otherwise fill this log with them), a search or a DNS check only reads.
 */
const NOT_CHANGES = new Set(['POST /tx/v1/send', 'POST /tx/v1/send-async', 'POST /outbound/v1/search', 'POST /tx/v1/check-domain']);

/** Whether `method route` is recorded. */
export function audited(method: string, route: string): boolean {
  return MUTATING.has(method) && !NOT_CHANGES.has(`${method} ${route}`);
}

/** The target of a request: its path parameters (`handle=shop id=7`), never its body; null when it has none. */
export function targetOf(params: Record<string, string | undefined>): string | null {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(' ') : null;
}

/** Appends `entry`; a failure is logged, never the request's: the change it records is already made. */
export async function appendAudit(audit: AuditStore, logger: Pick<Logger, 'error'>, entry: AuditEntry): Promise<void> {
  try {
    await audit.append(entry);
  } catch (err) {
    logger.error({ err, action: entry.action, target: entry.target }, 'audit entry not recorded');
  }
}

/**
 * Records every unsafe request to a REST route made with an API key (an anonymous one — a bad key, an unsubscribe
 * link — names nobody to audit), with the answer's status, once it is answered.
 */
export function auditMiddleware(o: { audit: AuditStore; logger: Pick<Logger, 'error'>; now: () => number }): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const principal = ctx.state.principal as KeyPrincipal | undefined;
      const route = ctx.state.routeTemplate as string | undefined;
      if (principal && route && audited(ctx.method, route)) {
        await appendAudit(o.audit, o.logger, {
          at: o.now(),
          via: 'api',
          actorKind: 'key',
          actor: String(principal.keyId),
          accountId: principal.account.id,
          keyId: principal.keyId,
          action: `${ctx.method} ${route}`,
          target: targetOf((ctx.params ?? {}) as Record<string, string | undefined>),
          address: ctx.ip,
          status: ctx.status,
        });
      }
    }
  };
}
