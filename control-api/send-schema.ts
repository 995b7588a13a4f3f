// Owns the /tx/v1/send body on the wire: its TypeBox schema (MailChannels MailSendBody, api.md §2.1).
// The rules a schema cannot say, and the domain type this schema must match, are in mta/outbound/send-request.ts.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_ITEMS, type SendRequest } from '../mta/outbound/send-request.js';

const EmailAddress = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  name: Type.Optional(Type.String({ maxLength: 998, description: 'Display name in raw text, e.g. John Doe, 张三' })),
});

const Headers = Type.Record(Type.String(), Type.String(), {
  description:
    'Custom headers (string to string). Reserved names are refused; personalization values win over root values; ' +
    'names are case-insensitive.',
});

const DkimFields = {
  dkim_domain: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: 'Requires dkim_selector.' })),
  dkim_selector: Type.Optional(
    Type.String({ minLength: 1, maxLength: 63, description: 'Without dkim_domain, the domain of `from` is used.' }),
  ),
  dkim_private_key: Type.Optional(
    Type.String({ minLength: 1, description: 'Base64 (DER) or PEM RSA key; requires dkim_domain and dkim_selector.' }),
  ),
};

const Recipients = (min: number) => Type.Array(EmailAddress, { minItems: min, maxItems: MAX_ITEMS });

const Personalization = Type.Object({
  to: Recipients(1),
  cc: Type.Optional(Recipients(0)),
  bcc: Type.Optional(Recipients(0)),
  from: Type.Optional(EmailAddress),
  reply_to: Type.Optional(EmailAddress),
  envelope_from: Type.Optional(EmailAddress),
  subject: Type.Optional(Type.String()),
  headers: Type.Optional(Headers),
  dynamic_template_data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  ...DkimFields,
});

// A flat union of two literals: shallow enough for TS inference, and the OpenAPI document lists both values.
const ContentItem = Type.Object({
  type: Type.Union([Type.Literal('text/plain'), Type.Literal('text/html')], {
    errorMessage: 'must be text/plain or text/html',
  }),
  value: Type.String(),
  template_type: Type.Optional(Type.Literal('mustache')),
});

// additionalProperties:false refuses MailComposer's `path`, `href` and `raw`, which would read a file or fetch a URL.
const Attachment = Type.Object(
  {
    content: Type.String({ description: 'the attachment data, encoded in base64' }),
    filename: Type.String({ minLength: 1, maxLength: 255 }),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    content_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 250, description: 'Makes the attachment inline, referenced by cid:' }),
    ),
  },
  { additionalProperties: false },
);

const Tracking = Type.Object({
  enable: Type.Optional(Type.Boolean({ default: false })),
  custom_domain_name: Type.Optional(
    Type.String({ description: 'name of an active custom tracking domain of this scope (the account\'s or its parent\'s); requires enable: true' }),
  ),
});

/** The `/tx/v1/send` and `/tx/v1/send-async` request body (OAS-E MailSendBody + 1.7 fields). */
export const MailSendBody = Type.Object({
  personalizations: Type.Array(Personalization, { minItems: 1, maxItems: MAX_ITEMS }),
  from: EmailAddress,
  reply_to: Type.Optional(EmailAddress),
  envelope_from: Type.Optional(EmailAddress),
  subject: Type.String(),
  content: Type.Array(ContentItem, { minItems: 1 }),
  attachments: Type.Optional(Type.Array(Attachment, { maxItems: MAX_ITEMS })),
  campaign_id: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 48,
      pattern: '^\\S+$',
      errorMessage: 'must be 1-48 characters without whitespace',
    }),
  ),
  headers: Type.Optional(Headers),
  tracking_settings: Type.Optional(
    Type.Object(
      {
        click_tracking: Type.Optional({
          ...Tracking,
          description: 'rewrite every http(s) <a href> of the HTML part (not clicktracking="off") to a signed /t/c/ link; click events',
        }),
        open_tracking: Type.Optional({ ...Tracking, description: 'a 1x1 pixel (/t/o/) at the end of the HTML body; open events' }),
      },
      { description: 'text parts are left alone; the links are on http.public_url or the named custom tracking domain' },
    ),
  ),
  unsubscribe_settings: Type.Optional(
    Type.Object({
      custom_domain_name: Type.Optional(
        Type.String({ description: 'an active custom tracking domain of scope unsubscribe: the List-Unsubscribe URL goes on its host (non-transactional mail)' }),
      ),
    }),
  ),
  transactional: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { default: true })),
  ...DkimFields,
});

export type SendBody = Static<typeof MailSendBody>;

// Compile-time: the wire schema's type and the outbound room's SendRequest are identical (so mutually assignable);
// a field added to, removed from or retyped in only one of them fails `tsc`.
type Identical<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const schemaMatchesSendRequest: Identical<SendBody, SendRequest> = true;
void schemaMatchesSendRequest;
