// Owns the public tracking URLs: GET /t/c/{token} redirects a click, GET /t/o/{token} answers the open pixel.
import { Type } from '@sinclair/typebox';
import { PIXEL_GIF } from '../../mta/outbound/tracker.js';
import type { TrackKind } from '../../mta/outbound/tracking-token.js';
import { notFound } from '../errors.js';
import { defineRoute, type AnyRoute, type RequestInfo, type Reply } from '../route.js';
import type { Services } from '../services.js';

// Any length reaches the tracker, so every malformed token is the same 404 as an altered one.
const TokenParams = Type.Object({ token: Type.String({ maxLength: 4096 }) });

// Nothing on the way may keep a copy: every open and click must reach the tracker to be counted.
const NO_CACHE = { 'Cache-Control': 'no-cache, no-store, must-revalidate, private, max-age=0', Pragma: 'no-cache', Expires: '0' };

async function track(s: Services, kind: TrackKind, req: RequestInfo<{ token: string }, unknown, unknown>): Promise<Reply> {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const answer = await s.tracking.hit({
    kind,
    token: req.params.token,
    host: header('host'),
    userAgent: header('user-agent'),
    ip: req.ip,
    method: req.method,
    query: req.querystring,
  });
  if (answer.kind === 'not-found') throw notFound('this tracking link is not valid');
  if (answer.kind === 'redirect') {
    return { status: 302, headers: { ...NO_CACHE, Location: answer.url, 'Referrer-Policy': 'no-referrer' } };
  }
  return { status: 200, type: 'image/gif', body: PIXEL_GIF, headers: NO_CACHE };
}

const description = 'invalid, altered, expired, or not issued for this host name (nothing is recorded)';

export const trackingRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/t/c/{token}',
    summary: 'Click tracking: records a click event and redirects to the link stored when the message was sent',
    tags: ['tracking'],
    auth: 'none',
    params: TokenParams,
    responses: { 302: { description: 'to the link\'s target (HEAD: the same, nothing recorded)' }, 404: { description } },
    handler: (s, req) => track(s, 'click', req),
  }),
  defineRoute({
    method: 'GET',
    path: '/t/o/{token}',
    summary: 'Open tracking: records an open event and answers a 1x1 transparent GIF (43 bytes, never cached)',
    tags: ['tracking'],
    auth: 'none',
    params: TokenParams,
    responses: { 200: { description: 'the pixel', contentType: 'image/gif' }, 404: { description } },
    handler: (s, req) => track(s, 'open', req),
  }),
];
