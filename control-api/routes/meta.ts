// Owns the unauthenticated service routes: /healthz and /openapi.json.
import { Type } from '@sinclair/typebox';
import { buildOpenApi } from '../openapi.js';
import { defineRoute, type AnyRoute } from '../route.js';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  storage: Type.Boolean(),
  listeners: Type.Record(Type.String(), Type.Boolean()),
});

/** /healthz and /openapi.json; the latter documents `routes` plus itself. */
export function metaRoutes(routes: readonly AnyRoute[], version: string): AnyRoute[] {
  const own: AnyRoute[] = [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: storage answers and every listener is bound (200), else 503',
      tags: ['service'],
      auth: 'none',
      responses: { 200: { description: 'healthy', schema: Health }, 503: { description: 'degraded', schema: Health } },
      handler: (s) => {
        let storage = false;
        let report;
        try {
          report = s.health();
          storage = report.storage;
        } catch {
          report = { storage: false, listeners: {} };
        }
        const ok = storage && Object.values(report.listeners).every(Boolean);
        return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'degraded', storage, listeners: report.listeners } };
      },
    }),
  ];
  let doc: Record<string, unknown> | undefined;
  const openapi = defineRoute({
    method: 'GET',
    path: '/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    tags: ['service'],
    auth: 'none',
    responses: { 200: { description: 'the document' } },
    handler: () => {
      doc ??= buildOpenApi([...routes, ...own, openapi], version);
      return { status: 200, body: doc };
    },
  });
  return [...own, openapi];
}
