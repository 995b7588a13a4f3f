// Owns POST /tx/v1/check-domain (api.md §2.1): DKIM, SPF, lockdown, sender-domain and return path checks over real DNS.
import { Type, type Static } from '@sinclair/typebox';
import { normalizePrivateKey } from '../../mta/outbound/dkim-sign.js';
import { badRequest } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { TxError } from '../schemas.js';

const Verdict = Type.Union([Type.Literal('passed'), Type.Literal('failed')]);
const Reasoned = Type.Object({ reason: Type.Optional(Type.String()), verdict: Verdict });

const CheckDomainBody = Type.Object({
  domain: Type.String({ minLength: 1, maxLength: 253 }),
  dkim_settings: Type.Optional(
    Type.Array(
      Type.Object({
        dkim_domain: Type.Optional(Type.String({ maxLength: 253 })),
        dkim_selector: Type.Optional(Type.String({ maxLength: 63 })),
        dkim_private_key: Type.Optional(Type.String({ maxLength: 16_384 })),
      }),
      { maxItems: 10 },
    ),
  ),
  sender_id: Type.Optional(Type.String({ maxLength: 256 })),
  envelope_from_domain: Type.Optional(Type.String({ maxLength: 253 })),
});

/**
 * What the schema cannot say: every `dkim_private_key` must parse as an RSA private key (PEM, or base64 DER as the
 * SDK sends it) before the checks derive its public key. One message per bad field.
 */
export function validateCheckDomainBody(body: Static<typeof CheckDomainBody>): string[] {
  const errors: string[] = [];
  (body.dkim_settings ?? []).forEach((setting, i) => {
    if (setting.dkim_private_key === undefined) return;
    try {
      normalizePrivateKey(setting.dkim_private_key);
    } catch {
      errors.push(`dkim_settings[${i}].dkim_private_key: is not an RSA private key (PEM, or base64 DER)`);
    }
  });
  return errors;
}

const CheckDomainResult = Type.Object({
  check_results: Type.Object({
    dkim: Type.Array(
      Type.Object({
        dkim_domain: Type.String(),
        dkim_selector: Type.String(),
        dkim_key_status: Type.Optional(Type.String()),
        reason: Type.Optional(Type.String()),
        verdict: Verdict,
      }),
    ),
    domain_lockdown: Reasoned,
    sender_domain: Type.Object({ a: Reasoned, mx: Reasoned, verdict: Verdict }),
    spf: Type.Object({
      reason: Type.Optional(Type.String()),
      spfRecord: Type.Optional(Type.String()),
      spfRecordError: Type.Optional(Type.String()),
      verdict: Type.String(),
    }),
    // Sluice's own (MailChannels clients ignore unknown keys); absent while outbound.return_path_domain is unset.
    return_path: Type.Optional(
      Type.Object(
        { domain: Type.String(), reason: Type.Optional(Type.String()), verdict: Verdict },
        { description: 'The envelope sender domain this domain\'s mail leaves with, and whether SPF on it aligns with the domain for DMARC (passed: <prefix>.<domain> is a CNAME of the return path domain)' },
      ),
    ),
  }),
  references: Type.Optional(Type.Array(Type.String())),
});

export const checkDomainRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/check-domain',
    summary: 'Check a sending domain: DKIM records, SPF for our address, Domain Lockdown, MX/A, return path alignment',
    tags: ['sending'],
    auth: 'api',
    body: CheckDomainBody,
    responses: {
      200: { description: 'check results (DNS problems are verdicts, not errors)', schema: CheckDomainResult },
      400: { description: 'invalid request', schema: TxError },
    },
    handler: async (s, { principal, body }) => {
      const errors = validateCheckDomainBody(body);
      if (errors.length > 0) throw badRequest(...errors);
      return { status: 200, body: await s.checkDomain(principal.account, body) };
    },
  }),
];
