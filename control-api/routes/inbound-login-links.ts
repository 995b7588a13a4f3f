// Owns the login-link routes of /inbound/v1/domains (OAS-I "Create login link", "Bulk create login links"): a signed,
// short-lived, single-use link that opens the web console as the admin of one domain (control-api/console/login-link.ts).
import { Type, type Static } from '@sinclair/typebox';
import { normaliseDomain } from '../../filters/inbound-names.js';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import { loginLinkUrl, mintLoginLink } from '../console/login-link.js';
import { ApiError } from '../errors.js';
import { ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { Services } from '../services.js';
import { bad, batchAnswers, common, DomainParams, MAX_BATCH, missing, tags } from './inbound-domain-wire.js';

const LoginLinkResponse = Type.Object({
  loginLink: Type.String({ description: 'If a user browses to this URL (within 15 minutes, once), they are signed in to the web console as the domain\'s admin.' }),
});

// OAS-I CommentedLoginLink: `loginLink` on a success only.
const CommentedLoginLink = Type.Object({
  domain: Type.String({ description: 'the domain the request was for (canonical when it is a valid name)' }),
  code: Type.Integer({ description: '200 created; 400 not a valid name; 403 an alias, or bound to another API key; 404 no such domain of this account' }),
  comment: Type.Optional(Type.String()),
  loginLink: Type.Optional(Type.String()),
});

/** A link for `principal`'s domain `raw` (ownDomain's refusals: 400, 403 alias or bound to another key, 404). */
async function linkFor(s: Services, principal: KeyPrincipal, raw: string): Promise<{ domain: string; loginLink: string }> {
  const row = await ownDomain(s, principal, raw);
  // The session it opens acts with this key: revoking the key, or binding the domain to another, ends it.
  const token = mintLoginLink(s.loginLinks.secret, { accountId: principal.account.id, keyId: principal.keyId, domain: row.domain, now: s.now() });
  return { domain: row.domain, loginLink: loginLinkUrl(s.loginLinks.publicUrl(), token) };
}

export const inboundLoginLinkRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/domains/{domain}/login-link',
    summary: 'A link that signs its user in to the web console as the domain\'s admin (its quarantine, lists and recipients only); good for 15 minutes, once',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    responses: { 200: { description: 'the link', schema: LoginLinkResponse }, ...bad, ...common, ...missing },
    handler: async (s, { principal, params }) => ({ status: 200, body: { loginLink: (await linkFor(s, principal, params.domain)).loginLink } }),
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/domains/batch/login-link',
    summary: 'Login links for up to 1000 domains; each domain gets its own result code',
    tags,
    auth: 'inbound',
    rateLimited: true,
    body: Type.Object({
      domains: Type.Array(Type.Object({ domain: Type.String({ maxLength: 1024 }) }), { minItems: 1, maxItems: MAX_BATCH }),
    }),
    // 1000 names of up to 1024 characters each are more than the default 1 MiB.
    bodyLimit: 2 * 1024 * 1024,
    responses: batchAnswers('per-domain results: successes (200, with loginLink) and errors (400, 403, 404, with a comment)', CommentedLoginLink),
    handler: async (s, { principal, body }) => {
      const successes: Static<typeof CommentedLoginLink>[] = [];
      const errors: Static<typeof CommentedLoginLink>[] = [];
      for (const { domain } of body.domains) {
        try {
          successes.push({ code: 200, ...(await linkFor(s, principal, domain)) });
        } catch (err) {
          // A refusal of this one domain is its result; anything else (the store failing) fails the request: 500.
          if (!(err instanceof ApiError)) throw err;
          errors.push({ domain: normaliseDomain(domain) ?? domain, code: err.status, comment: err.errors[0] ?? '' });
        }
      }
      return { status: 200, body: { successes, errors } };
    },
  }),
];
