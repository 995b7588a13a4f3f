// Owns the unauthenticated service routes: /healthz, /readyz and /openapi.json.
import { Type } from '@sinclair/typebox';
import { buildOpenApi } from '../openapi.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { Services } from '../services.js';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  storage: Type.Boolean({ description: 'reads answer and the last write did not fail' }),
  listeners: Type.Record(Type.String(), Type.Boolean()),
  reasons: Type.Optional(Type.Array(Type.String(), { description: 'what is wrong, one line each (degraded only)' })),
});

const Ready = Type.Object({
  ready: Type.Boolean(),
  reasons: Type.Optional(Type.Array(Type.String(), { description: 'why not ready' })),
});

/** The facts of health and what is wrong with them, one line each (none when healthy). */
async function diagnose(s: Services, probe: boolean): Promise<{ storage: boolean; listeners: Record<string, boolean>; reasons: string[] }> {
  let report;
  try {
    report = await s.health({ probe });
  } catch {
    return { storage: false, listeners: {}, reasons: ['storage: reads fail'] };
  }
  const reasons: string[] = [];
  if (!report.storage) reasons.push('storage: reads fail');
  const w = report.writeFailure;
  if (w) reasons.push(`storage: the last write failed at ${new Date(w.at).toISOString()} (${w.reason}, ${w.code})`);
  for (const [name, up] of Object.entries(report.listeners)) if (!up) reasons.push(`listener ${name} is not listening`);
  return { storage: report.storage && !w, listeners: report.listeners, reasons };
}

/** /healthz, /readyz and /openapi.json; the latter documents `routes` plus itself. */
export function metaRoutes(routes: readonly AnyRoute[], version: string): AnyRoute[] {
  const own: AnyRoute[] = [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      summary: 'Health report: reads answer, the last write did not fail, every listener is bound (200), else 503',
      tags: ['service'],
      auth: 'none',
      responses: { 200: { description: 'healthy', schema: Health }, 503: { description: 'degraded, with reasons', schema: Health } },
      handler: async (s) => {
        const d = await diagnose(s, false);
        const ok = d.reasons.length === 0;
        const body = { status: ok ? 'ok' : 'degraded', storage: d.storage, listeners: d.listeners };
        return { status: ok ? 200 : 503, body: ok ? body : { ...body, reasons: d.reasons } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/readyz',
      // After a failed write, one probe write that waits for no lock: an idle node out of rotation comes back alone.
      summary: 'Readiness: storage is writable and every listener is bound (200), else 503',
      tags: ['service'],
      auth: 'none',
      responses: { 200: { description: 'ready', schema: Ready }, 503: { description: 'not ready, with reasons', schema: Ready } },
      handler: async (s) => {
        const d = await diagnose(s, true);
        return d.reasons.length === 0
          ? { status: 200, body: { ready: true } }
          : { status: 503, body: { ready: false, reasons: d.reasons } };
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
