// Owns the ACME HTTP-01 challenge route (RFC 8555 §8.3): the CA fetches the key authorization of a token here.
import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../route.js';

const text = 'text/plain; charset=utf-8';

export const acmeRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/.well-known/acme-challenge/{token}',
    summary: 'ACME HTTP-01 challenge: the key authorization of a pending token (only while Sluice orders a certificate)',
    tags: ['acme'],
    auth: 'none',
    // RFC 8555 §8.3: a token is base64url, at least 128 bits of entropy.
    params: Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{1,256}$' }) }),
    responses: { 200: { description: 'the key authorization', contentType: text }, 404: { description: 'no such pending token' } },
    handler: async (s, { params }) => {
      const keyAuthorization = await s.acmeChallenge(params.token);
      if (keyAuthorization === undefined) return { status: 404, type: text, body: 'no such ACME challenge\n' };
      return { status: 200, type: text, body: keyAuthorization };
    },
  }),
];
