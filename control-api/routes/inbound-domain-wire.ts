// Owns the wire side of /inbound/v1/domains: TypeBox schemas, request sections parsed for storage, the Domain
// rendering and the texts of provisioning failures (shared by the domain routes and the alias/downstream routes).
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import {
  badDownstreamTargetReason, normaliseDomain, normaliseDownstreamTarget, normaliseEmail,
} from '../../filters/inbound-names.js';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import {
  DIGEST_INTERVALS,
  type DigestInterval,
  type DomainDetails,
  type DomainSections,
  type DomainSettings,
  type DownstreamAddress,
  type InboundSubscriptionRow,
  type ProvisionResult,
} from '../../storage/ports/inbound-domains.js';
import { refusalMessage } from '../../mta/delivery/target-guard.js';
import { ApiError, badRequest, conflict, forbidden } from '../errors.js';
import { CodedError } from '../schemas.js';
import type { Services } from '../services.js';

/** At most this many downstream addresses per domain (SDK client rule, OAS-I maxItems). */
export const MAX_DOWNSTREAMS = 10;
/** At most this many domains per batch request (OAS-I). */
export const MAX_BATCH = 1000;

const AbusePolicy = Type.Union([Type.Literal('block'), Type.Literal('flag'), Type.Literal('quarantine')]);

// Quarantine digests (issue 37) are a Sluice extension of the domain's settings: MailChannels documents no such
// field, so each says so in /openapi.json, and a client that never sends them gets the defaults.
const DIGEST_DOC =
  'Sluice extension: how often each recipient with quarantined mail gets a digest of it, with one-click release, ' +
  'delete and release-and-safelist links (default daily; off: none)';
const DIGEST_ADMINS_DOC = 'Sluice extension: the domain\'s admins (those on the domain or an alias of it) also get a digest of the whole domain (default false)';
const DigestInterval = Type.Union(DIGEST_INTERVALS.map((i) => Type.Literal(i)), { description: DIGEST_DOC });
const DIGEST_MSG = `must be one of ${DIGEST_INTERVALS.join(', ')}`;

// The header is written into relayed mail, so its name and value must not carry CR, LF or a colon in the name
// (RFC 5322 §2.2, §3.6.8: a field name is printable US-ASCII except ":").
const HeaderName = Type.String({
  minLength: 1,
  maxLength: 76,
  pattern: '^[!-9;-~]+$',
  errorMessage: 'must be 1-76 printable ASCII characters without ":" or spaces',
});
/**
 * Header names a domain's spam flag may not take (compared case-insensitively, RFC 5322 §2.2). Policy writes the
 * flag into relayed mail and strips every field of that name from incoming mail first (a sender must not forge it),
 * so a name here would delete or overwrite what identifies, routes, structures or authenticates the message:
 * identity (From, Sender, Reply-To, To, Cc, Bcc: RFC 5322 §3.6.2-3), trace and routing (Return-Path, Received:
 * §3.6.7; Delivered-To: RFC 9228; Resent-*: §3.6.6), identification and origination (Message-ID, In-Reply-To,
 * References, Date: §3.6.1, §3.6.4) and Subject (§3.6.5: the author's words, lost to every message), structure
 * (MIME-Version, Content-*: RFC 2045), authentication (DKIM-Signature: RFC 6376; ARC-*: RFC 8617;
 * Authentication-Results: RFC 8601; Received-SPF: RFC 7208 §9.1). List-* and X-* stay open: they carry no such role.
 */
const RESERVED_HEADERS = new Set([
  'from', 'sender', 'reply-to', 'to', 'cc', 'bcc', 'return-path', 'received', 'delivered-to', 'message-id',
  'in-reply-to', 'references', 'date', 'subject', 'mime-version', 'dkim-signature', 'authentication-results', 'received-spf',
]);
const RESERVED_PREFIXES = ['resent-', 'content-', 'arc-'];

/** True for a header name a spam flag may not take (RESERVED_HEADERS). */
export function isReservedHeaderName(name: string): boolean {
  const n = name.toLowerCase();
  return RESERVED_HEADERS.has(n) || RESERVED_PREFIXES.some((p) => n.startsWith(p));
}

const HeaderValue = Type.String({
  minLength: 1,
  maxLength: 900,
  pattern: '^[ -~]+$',
  errorMessage: 'must be 1-900 printable ASCII characters',
});

/**
 * An optional field that may also be null (the SDK sends null for sections it leaves out). A union reports only
 * "Expected union value", so each carries the message a client needs.
 */
export const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, errorMessage: string) =>
  Type.Optional(Type.Union([t, Type.Null()], { errorMessage }));

const POLICY_MSG = 'must be block, flag or quarantine';
const BOOL_MSG = 'must be a boolean';
const HEADER_NAME_MSG = 'must be 1-76 printable ASCII characters without ":" or spaces';
const HEADER_VALUE_MSG = 'must be 1-900 printable ASCII characters';
export const DOWNSTREAMS_MSG =
  'must be at most 10 records {priority: 0-65535, weight: 0-65535, port: 1-65535, target: host name or IP}';
export const NAMES_MSG = 'must be a list of at most 1000 strings';

/** The settings fields both the provisioning body and PUT …/settings take. */
const SETTINGS_FIELDS = {
  abusePolicy: nullable(AbusePolicy, POLICY_MSG),
  abusePolicyOverride: nullable(Type.Boolean(), BOOL_MSG),
  spamHeaderName: nullable(HeaderName, HEADER_NAME_MSG),
  spamHeaderValue: nullable(HeaderValue, HEADER_VALUE_MSG),
  quarantineDigest: Type.Optional(Type.Union([DigestInterval, Type.Null()], { errorMessage: DIGEST_MSG, description: DIGEST_DOC })),
  quarantineDigestAdmins: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { errorMessage: BOOL_MSG, description: DIGEST_ADMINS_DOC })),
};

export const Settings = Type.Object(SETTINGS_FIELDS);

export const Downstream = Type.Object({
  priority: Type.Integer({ minimum: 0, maximum: 65535, errorMessage: 'must be an integer from 0 to 65535' }),
  weight: Type.Integer({ minimum: 0, maximum: 65535, errorMessage: 'must be an integer from 0 to 65535' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, errorMessage: 'must be an integer from 1 to 65535' }),
  target: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Host name (stored ending in "."; a single label such as localhost. needs the dot) or an IPv4/IPv6 literal',
  }),
});
export const Downstreams = Type.Array(Downstream, { maxItems: MAX_DOWNSTREAMS });
export const Names = Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 });

export const DomainBody = Type.Object({
  domain: Type.String({ minLength: 1, maxLength: 1024 }),
  subscriptionHandle: Type.String({ minLength: 1, maxLength: 255 }),
  settings: Type.Optional(Settings),
  admins: nullable(Names, NAMES_MSG),
  downstreamAddresses: nullable(Downstreams, DOWNSTREAMS_MSG),
  aliases: nullable(Names, NAMES_MSG),
});

export const SettingsBody = Type.Object({
  ...SETTINGS_FIELDS,
  admins: nullable(Names, NAMES_MSG),
  downstreamAddresses: nullable(Downstreams, DOWNSTREAMS_MSG),
  aliases: nullable(Names, NAMES_MSG),
});

/** The wire `Domain` as responses carry it. */
export const Domain = Type.Object({
  domain: Type.String(),
  subscriptionHandle: Type.String(),
  settings: Type.Object({
    abusePolicy: Type.Union([AbusePolicy, Type.Null()]),
    abusePolicyOverride: Type.Boolean(),
    spamHeaderName: Type.Union([Type.String(), Type.Null()]),
    spamHeaderValue: Type.Union([Type.String(), Type.Null()]),
    quarantineDigest: DigestInterval,
    quarantineDigestAdmins: Type.Boolean({ description: DIGEST_ADMINS_DOC }),
  }),
  admins: Type.Array(Type.String()),
  downstreamAddresses: Type.Array(Downstream),
  aliases: Type.Array(Type.String()),
});

export const CommentedDomain = Type.Object({
  domain: Type.Object({ domain: Type.String(), subscriptionHandle: Type.String() }, { additionalProperties: true }),
  code: Type.Integer(),
  comment: Type.Optional(Type.String()),
});

export const ProvisionQuery = Type.Object({
  'associate-key': Type.Optional(Type.Boolean({ description: 'bind the domain to the calling key' })),
  overwrite: Type.Optional(Type.Boolean({ description: 'replace the sections given when already provisioned' })),
});

export const DomainParams = Type.Object({ domain: Type.String({ maxLength: 1024 }) });
export const AliasParams = Type.Object({ domain: Type.String({ maxLength: 1024 }), alias: Type.String({ maxLength: 255 }) });

export const tags = ['inbound-domains'];
export const common = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  403: { description: 'wrong key scope, domain bound to another key, or an alias domain', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};
export const bad = { 400: { description: 'invalid name or body', schema: CodedError } };
export const missing = { 404: { description: 'no such domain of this account', schema: CodedError } };

/** The answers of a batch route (OAS-I's two batches): 200 with each domain's `item` in `successes` or `errors`. */
export function batchAnswers<T extends TSchema>(description: string, item: T) {
  return { 200: { description, schema: Type.Object({ successes: Type.Array(item), errors: Type.Array(item) }) }, ...bad, ...common };
}

/** Renders the wire `Domain` (camelCase names are the API's own). */
export function renderDomain(d: DomainDetails): Static<typeof Domain> {
  return {
    domain: d.row.domain,
    subscriptionHandle: d.subscriptionHandle,
    settings: {
      abusePolicy: d.row.abuse_policy,
      abusePolicyOverride: d.row.abuse_policy_override === true,
      spamHeaderName: d.row.spam_header_name,
      spamHeaderValue: d.row.spam_header_value,
      quarantineDigest: d.row.digest_interval,
      quarantineDigestAdmins: d.row.digest_admins,
    },
    admins: d.admins,
    downstreamAddresses: d.downstreams,
    aliases: d.aliases,
  };
}

export async function render(s: Services, domainId: number): Promise<Static<typeof Domain>> {
  const row = await s.inboundDomains.findDomainById(domainId);
  if (!row) throw new Error(`domain ${domainId} vanished`);
  return renderDomain(await s.inboundDomains.details(row));
}

/** The wire's settings fields (the two digest ones named as the API names them). */
type SettingsInput = Partial<Record<keyof Omit<DomainSettings, 'digestInterval' | 'digestAdmins'>, unknown>> & {
  quarantineDigest?: DigestInterval | null | undefined;
  quarantineDigestAdmins?: boolean | null | undefined;
};

type SectionInput = {
  settings?: SettingsInput | null;
  admins?: string[] | null;
  downstreamAddresses?: Static<typeof Downstream>[] | null;
  aliases?: string[] | null;
};

/**
 * Turns the request's sections into canonical storage sections, or the list of field errors. Null counts as absent
 * (the SDK sends null for sections it leaves out); aliases are normalised like domains and may not be the domain.
 */
export function parseSections(
  input: SectionInput,
  domain: string,
  prefix: string,
  /** Where the settings' fields sit in the body (PUT …/settings has them at the top). */
  settingsAt = `${prefix}settings.`,
): { sections: DomainSections; errors: string[] } {
  const errors: string[] = [];
  const sections: DomainSections = {};
  if (input.settings) {
    const st = input.settings as Partial<Record<keyof DomainSettings, DomainSettings[keyof DomainSettings] | null>>;
    const settings: Partial<DomainSettings> = {};
    if (st.abusePolicy != null) settings.abusePolicy = st.abusePolicy as DomainSettings['abusePolicy'];
    if (st.abusePolicyOverride != null) settings.abusePolicyOverride = st.abusePolicyOverride as boolean;
    if (st.spamHeaderName != null && isReservedHeaderName(st.spamHeaderName as string)) {
      errors.push(`${settingsAt}spamHeaderName: "${st.spamHeaderName as string}" identifies, routes, structures or authenticates a message; use another name (such as X-Spam-Flag)`);
    } else if (st.spamHeaderName != null) settings.spamHeaderName = st.spamHeaderName as string;
    if (st.spamHeaderValue != null) settings.spamHeaderValue = st.spamHeaderValue as string;
    if (input.settings.quarantineDigest != null) settings.digestInterval = input.settings.quarantineDigest;
    if (input.settings.quarantineDigestAdmins != null) settings.digestAdmins = input.settings.quarantineDigestAdmins;
    sections.settings = settings;
  }
  if (input.admins) {
    sections.admins = [];
    input.admins.forEach((raw, i) => {
      const email = normaliseEmail(raw);
      if (email) sections.admins!.push(email);
      else errors.push(`${prefix}admins[${i}]: "${raw}" is not a valid e-mail address`);
    });
  }
  if (input.downstreamAddresses) {
    sections.downstreams = parseDownstreams(input.downstreamAddresses, `${prefix}downstreamAddresses`, errors);
  }
  if (input.aliases) {
    sections.aliases = [];
    input.aliases.forEach((raw, i) => {
      const alias = normaliseDomain(raw);
      if (!alias) errors.push(`${prefix}aliases[${i}]: "${raw}" is not a valid domain name`);
      else if (alias === domain) errors.push(`${prefix}aliases[${i}]: a domain cannot be its own alias`);
      else sections.aliases!.push(alias);
    });
  }
  return { sections, errors };
}

export function parseDownstreams(records: Static<typeof Downstream>[], field: string, errors: string[]): DownstreamAddress[] {
  const out: DownstreamAddress[] = [];
  records.forEach((r, i) => {
    const target = normaliseDownstreamTarget(r.target);
    if (!target) {
      errors.push(`${field}[${i}].target: ${badDownstreamTargetReason(r.target)}`);
    }
    else out.push({ priority: r.priority, weight: r.weight, port: r.port, target });
  });
  return out;
}

/**
 * Appends a 400 text for each downstream the outbound-connection policy refuses: a target resolving to an internal
 * address (loopback, RFC 1918, link-local, …) or to one of Sluice's own listeners, unless the operator allowed it
 * in security.allow_private_targets. Targets `parseDownstreams` refused are skipped (already reported).
 */
export async function screenDownstreams(
  s: Pick<Services, 'targets'>,
  records: readonly Static<typeof Downstream>[] | null | undefined,
  field: string,
  errors: string[],
): Promise<void> {
  const found = await Promise.all(
    (records ?? []).map(async (r, i) => {
      const target = normaliseDownstreamTarget(r.target);
      if (!target) return undefined;
      const host = target.replace(/\.$/, '');
      const refused = await s.targets.screen(host, r.port);
      return refused ? `${field}[${i}].target: ${refusalMessage('downstream', host, refused)}` : undefined;
    }),
  );
  for (const e of found) if (e) errors.push(e);
}

/** The account's active subscription of this handle; 400 otherwise (api.md decisions table). */
export async function subscriptionOr400(
  s: Services,
  principal: KeyPrincipal,
  handle: string,
  field: string,
): Promise<InboundSubscriptionRow> {
  const sub = await s.inboundDomains.findSubscription(principal.account.id, handle);
  if (!sub || !sub.active) throw badRequest(`${field}: "${handle}" is not an active subscription of this account`);
  return sub;
}

/**
 * 409 for a name that is, or is a parent or a subdomain of, a name another customer serves: it would receive mail
 * meant for them. The other customer's name is not told; the operator can provision the domain.
 */
export function overlapConflict(name: string): ApiError {
  return conflict(
    `"${name}" overlaps a domain another customer has provisioned (the same name, a parent or a subdomain of it); the operator can provision it (sluice inbound-domains provision)`,
  );
}

/** Client-facing text and status of a failed provisioning. */
export function provisionFailure(res: Extract<ProvisionResult, { ok: false }>, domain: string): ApiError {
  switch (res.reason) {
    case 'other-account':
      return conflict(`domain "${domain}" is already provisioned by another customer`);
    case 'is-alias':
      return conflict(`domain "${domain}" is already provisioned as an alias`);
    case 'alias-taken':
      return conflict(`alias "${res.alias}" is already provisioned as a domain or as an alias of another domain`);
    case 'bound-to-other-key':
      return forbidden(`domain "${domain}" is associated with another API key`);
    case 'limit':
      return forbidden('the subscription\'s domain limit is reached');
    case 'overlap':
      return overlapConflict(res.name);
  }
}
