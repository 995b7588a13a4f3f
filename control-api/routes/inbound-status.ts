// Owns GET /inbound/v1/status (api.md §5): the inbound service's condition for a client's health check.
import { ApiError } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError } from '../schemas.js';

export const inboundStatusRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/status',
    summary: 'Condition of the inbound service: 200 (no body) while storage answers and the MX listener is bound',
    tags: ['inbound-service'],
    auth: 'inbound',
    rateLimited: true,
    responses: {
      200: { description: 'in good condition' },
      401: { description: 'missing or unknown API key', schema: CodedError },
      503: { description: 'degraded, or rate limit exceeded', schema: CodedError },
    },
    handler: async (s) => {
      const health = await s.health();
      const ok = health.storage && health.listeners.mx !== false;
      if (!ok) throw new ApiError(503, ['the inbound service is degraded']);
      // OAS-I documents 200 without content: no body and no Content-Type (app.ts).
      return { status: 200 };
    },
  }),
];
