// Checks the /tx/v1/send body: the TypeBox schema (through the routes' `validate`) and every rule of validateSendBody.
import t from 'tap';
import { ApiError } from '../../control-api/errors.js';
import { validate } from '../../control-api/route.js';
import { MailSendBody, type SendBody } from '../../control-api/send-schema.js';
import { UNSENDABLE_ADDRESS, validateSendRequest as validateSendBody } from '../../mta/outbound/send-request.js';
import { fitsSmtpPath } from '../../mta/smtp/address.js';
import { generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';

type Json = Record<string, unknown>;

function base(): Json {
  return {
    personalizations: [{ to: [{ email: 'bob@rcpt.test', name: 'Bob' }] }],
    from: { email: 'alice@sender.test', name: 'Alice' },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'hi' }],
  };
}

/** Schema errors (as the route answers them) or, when the schema passes, validateSendBody's messages. */
function problems(body: unknown): { status: number; errors: string[] } {
  try {
    const ok = validate(MailSendBody, body, 'body');
    return { status: 0, errors: validateSendBody(ok) };
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, errors: err.errors };
    throw err;
  }
}

/** Body with `p` merged into personalizations[0]. */
function withP(p: Json, root: Json = {}): Json {
  const b = base();
  const p0 = (b.personalizations as Json[])[0] as Json;
  return { ...b, ...root, personalizations: [{ ...p0, ...p }] };
}

t.test('a minimal body and a full body are valid', async (t) => {
  t.same(problems(base()), { status: 0, errors: [] });
  const pair = await generateDkimKeyPair(1024);
  const full = {
    ...base(),
    personalizations: [
      {
        to: [{ email: 'bob@rcpt.test' }],
        cc: [{ email: 'carol@rcpt.test', name: 'Carol' }],
        bcc: [{ email: 'dan@rcpt.test' }],
        from: { email: 'other@sender.test' },
        reply_to: { email: 'reply@sender.test', name: 'Replies' },
        envelope_from: { email: 'bounces@sender.test', name: 'ignored\r\n' },
        subject: 'Hi {{name}}',
        headers: { 'X-Campaign-Tag': 'spring', 'List-Unsubscribe': '<https://x.test/u>' },
        dynamic_template_data: { name: 'Bob', items: [{ n: 1 }] },
        dkim_domain: 'sender.test',
        dkim_selector: 'sel1',
        dkim_private_key: pair.privateKeyPem,
      },
    ],
    reply_to: { email: 'r@sender.test' },
    envelope_from: { email: 'b@sender.test' },
    content: [
      { type: 'text/plain', value: '{{name}}', template_type: 'mustache' },
      { type: 'text/html', value: '<b>{{name}}</b><img src="cid:logo">', template_type: 'mustache' },
    ],
    attachments: [
      { content: Buffer.from('png bytes').toString('base64'), filename: 'logo.png', type: 'image/png', content_id: 'logo' },
      { content: 'aGVs\r\nbG8=', filename: 'a.txt' },
    ],
    campaign_id: 'spring-2025_ü',
    headers: { 'X-Root': 'r' },
    tracking_settings: { click_tracking: { enable: false }, open_tracking: { enable: true, custom_domain_name: 'trk' } },
    unsubscribe_settings: { custom_domain_name: 'unsub' },
    transactional: null,
    dkim_selector: 'root',
  };
  t.same(problems(full), { status: 0, errors: [] });
});

t.test('schema: required fields, limits and shapes answer 400 naming the field', async (t) => {
  for (const field of ['personalizations', 'from', 'subject', 'content']) {
    const b = base();
    delete b[field];
    const r = problems(b);
    t.equal(r.status, 400, `${field} missing`);
    t.ok(r.errors.some((e) => e.startsWith(`${field}: `)), `${field} named: ${r.errors.join(' | ')}`);
  }

  const many = { ...base(), personalizations: Array.from({ length: 1001 }, () => ({ to: [{ email: 'a@b.test' }] })) };
  const r1 = problems(many);
  t.equal(r1.status, 400);
  t.match(r1.errors[0], /^personalizations: /);
  t.equal(problems({ ...base(), personalizations: many.personalizations.slice(0, 1000) }).status, 0, '1000 is fine');

  const rcpts = Array.from({ length: 1001 }, (_, i) => ({ email: `r${i}@b.test` }));
  for (const list of ['to', 'cc', 'bcc']) {
    const r = problems(withP({ [list]: rcpts }));
    t.equal(r.status, 400, `${list} 1001`);
    t.match(r.errors[0], new RegExp(`^personalizations\\[0\\]\\.${list}: `));
  }
  t.match(problems(withP({ to: [] })).errors[0], /^personalizations\[0\]\.to: /);
  t.match(problems({ ...base(), personalizations: [] }).errors[0], /^personalizations: /);
  t.match(problems({ ...base(), content: [] }).errors[0], /^content: /);
  t.match(problems({ ...base(), content: [{ type: 'text/plain', value: 'x', template_type: 'handlebars' }] }).errors[0], /^content\[0\]\.template_type: /);
  t.match(problems({ ...base(), from: { name: 'x' } }).errors[0], /^from\.email: /);
  t.match(problems({ ...base(), headers: { 'X-N': 5 } }).errors[0], /^headers\.X-N: /);
  t.match(problems({ ...base(), transactional: 'no' }).errors[0], /^transactional: /);
  t.equal(problems({ ...base(), transactional: false }).status, 0);

  const attachments = Array.from({ length: 1001 }, () => ({ content: '', filename: 'a' }));
  t.match(problems({ ...base(), attachments }).errors[0], /^attachments: /);

  for (const id of ['has space', 'x'.repeat(49), '']) {
    const r = problems({ ...base(), campaign_id: id });
    t.same(r, { status: 400, errors: ['campaign_id: must be 1-48 characters without whitespace'] }, JSON.stringify(id));
  }
  t.equal(problems({ ...base(), campaign_id: 'x'.repeat(48) }).status, 0);
});

t.test('schema: attachments refuse path, href and raw (MailComposer would read files or URLs)', async (t) => {
  for (const key of ['path', 'href', 'raw']) {
    const r = problems({ ...base(), attachments: [{ content: '', filename: 'passwd', [key]: '/etc/passwd' }] });
    t.equal(r.status, 400, key);
    t.ok(r.errors.some((e) => e.startsWith(`attachments[0]`)), r.errors.join(' | '));
  }
  const r = problems({ ...base(), attachments: [{ filename: 'a' }] });
  t.match(r.errors[0], /^attachments\[0\]\.content: /);
});

t.test('addresses: RFC 5321 local parts, IDN domains, no controls', async (t) => {
  const good = ['bob@rcpt.test', 'bob@bücher.de', 'x@例え.テスト', '"john.doe"@x.test', '"a@b"@x.test', "o'brien+tag@mail.x.co.uk", 'A.B-c_d@EXAMPLE.COM', `${'a'.repeat(64)}@x.test`];
  for (const email of good) t.same(problems(withP({ to: [{ email }] })).errors, [], email);
  const bad = [
    'no-at', 'a@b', 'a@-x.test', 'a..b@x.test', '.a@x.test', '"unterminated@x.test',
    'a@x.test.', 'a@[127.0.0.1]', 'a@1.2.3.4', 'a@under_score.test', 'ü@x.test', `${'a'.repeat(65)}@x.test`, '@x.test',
  ];
  for (const email of bad) {
    t.same(problems(withP({ to: [{ email }] })).errors, ['personalizations[0].to[0].email: invalid email address'], JSON.stringify(email));
  }
  const unsendable = ['a b@c.test', 'a@exa mple.test', 'a@x.test\r\nRCPT TO:<evil@x.test>', 'a@x.test\n', 'a\u0000@x.test', 'a@x.test>', '<a@x.test>'];
  for (const email of unsendable) {
    t.same(problems(withP({ to: [{ email }] })).errors, [`personalizations[0].to[0].email: ${UNSENDABLE_ADDRESS}`], JSON.stringify(email));
  }
  const r = problems(withP({ to: [{ email: 'ok@x.test' }, { email: 'bad' }], cc: [{ email: 'bad' }], bcc: [{ email: 'bad' }] }));
  t.same(r.errors, [
    'personalizations[0].to[1].email: invalid email address',
    'personalizations[0].cc[0].email: invalid email address',
    'personalizations[0].bcc[0].email: invalid email address',
  ]);
  t.same(problems({ ...base(), from: { email: 'x' }, reply_to: { email: 'y' }, envelope_from: { email: 'z' } }).errors, [
    'from.email: invalid email address',
    'reply_to.email: invalid email address',
    'envelope_from.email: invalid email address',
  ]);
  t.same(problems(withP({ from: { email: 'x' }, reply_to: { email: 'y' }, envelope_from: { email: 'bounce@x.test\r\nDATA' } })).errors, [
    'personalizations[0].from.email: invalid email address',
    'personalizations[0].reply_to.email: invalid email address',
    `personalizations[0].envelope_from.email: ${UNSENDABLE_ADDRESS}`,
  ]);
});

t.test('quoted local parts the SMTP client would refuse ("<", ">", spaces) are refused in every address field', async (t) => {
  // RFC 5321 allows them quoted; our client never writes them (they bounced locally as 5.1.3 / 5.1.7), so 400.
  for (const email of ['"john doe"@x.test', '"<evil>"@x.test', '"a>b"@x.test', '"tab\there"@x.test', '"a\\ b"@x.test']) {
    const fields = { from: { email }, reply_to: { email }, envelope_from: { email } };
    const r = problems(withP({ to: [{ email }], cc: [{ email }], bcc: [{ email }], ...fields }, fields));
    t.equal(r.status, 0, 'the schema passes: validateSendBody decides');
    t.same(
      r.errors,
      ['from', 'reply_to', 'envelope_from', 'personalizations[0].to[0]', 'personalizations[0].cc[0]', 'personalizations[0].bcc[0]',
        'personalizations[0].from', 'personalizations[0].reply_to', 'personalizations[0].envelope_from'].map((f) => `${f}.email: ${UNSENDABLE_ADDRESS}`),
      JSON.stringify(email),
    );
  }
  t.equal(fitsSmtpPath('"john.doe"@x.test'), true, 'a quoted local part without them is fine');
});

t.test('headers that cannot be written within 998-octet lines are refused (RFC 5322 §2.1.1)', async (t) => {
  const word = 'w'.repeat(998);
  const structured = (n: number) =>
    `header value has ${n} characters without white space; a structured header line cannot exceed 998 octets (only X- headers and Comments are encoded to fit)`;
  t.same(problems({ ...base(), headers: { 'List-Id': word } }).errors, [`headers.List-Id: ${structured(998)}`]);
  t.same(problems(withP({ headers: { 'In-Reply-To': `<${word}@x.test>` } })).errors, [`personalizations[0].headers.In-Reply-To: ${structured(1007)}`]);
  t.same(problems({ ...base(), headers: { [`X-${'n'.repeat(75)}`]: 'v' } }).errors, [
    `headers.X-${'n'.repeat(75)}: header name must be at most 76 characters (a field name cannot be folded)`,
  ]);
  // What can be written: a word that fits a 998-octet line, unstructured fields (RFC 2047-encoded), non-ASCII text
  // (always encoded), long values with spaces (folded), a 76-character name.
  for (const headers of [
    { 'List-Id': 'w'.repeat(997) }, { 'X-Data': 'x'.repeat(5000) }, { Comments: 'c'.repeat(5000) }, { Keywords: 'é'.repeat(2000) },
    { References: '<a@b.test> '.repeat(500) }, { [`X-${'n'.repeat(74)}`]: 'v' },
  ]) {
    t.same(problems({ ...base(), headers }).errors, [], Object.keys(headers)[0]!);
  }
});

t.test('hostile CR/LF in subject, names and headers is refused, never written', async (t) => {
  const cases: Array<[Json, string]> = [
    [{ ...base(), subject: 'Hi\r\nBcc: evil@x.test' }, 'subject: must not contain CR, LF or control characters'],
    [{ ...base(), subject: 'Hi\nthere' }, 'subject: must not contain CR, LF or control characters'],
    [{ ...base(), subject: 'Hi\u0000' }, 'subject: must not contain CR, LF or control characters'],
    [{ ...base(), from: { email: 'a@x.test', name: 'A\r\nX-Evil: 1' } }, 'from.name: must not contain CR, LF or control characters'],
    [{ ...base(), reply_to: { email: 'a@x.test', name: 'A\rB' } }, 'reply_to.name: must not contain CR, LF or control characters'],
    [withP({ to: [{ email: 'b@x.test', name: 'B\r\nBcc: evil@x.test' }] }), 'personalizations[0].to[0].name: must not contain CR, LF or control characters'],
    [withP({ cc: [{ email: 'b@x.test', name: 'B\n' }] }), 'personalizations[0].cc[0].name: must not contain CR, LF or control characters'],
    [withP({ subject: 'P\r\nX: y' }), 'personalizations[0].subject: must not contain CR, LF or control characters'],
    [withP({ from: { email: 'a@x.test', name: 'F\n' } }), 'personalizations[0].from.name: must not contain CR, LF or control characters'],
    [{ ...base(), headers: { 'X-Ok': 'v\r\nBcc: evil@x.test' } }, 'headers.X-Ok: header value must not contain CR, LF or control characters'],
    [withP({ headers: { 'X-Ok': 'v\n' } }), 'personalizations[0].headers.X-Ok: header value must not contain CR, LF or control characters'],
    [{ ...base(), headers: { 'X-Evil\r\nBcc': 'x' } }, 'headers.X-Evil??Bcc: header name must be printable ASCII without ":" or whitespace'],
    [{ ...base(), headers: { 'X-A: b': 'x' } }, 'headers.X-A: b: header name must be printable ASCII without ":" or whitespace'],
    [{ ...base(), headers: { 'X-Ä': 'x' } }, 'headers.X-Ä: header name must be printable ASCII without ":" or whitespace'],
    [{ ...base(), headers: { '': 'x' } }, 'headers.: header name must be printable ASCII without ":" or whitespace'],
  ];
  for (const [body, message] of cases) t.same(problems(body), { status: 0, errors: [message] }, message);
  // HTAB and non-ASCII are fine (folding whitespace; RFC 2047 encoding by the composer)
  t.same(problems({ ...base(), subject: 'Grüße\tand 你好', headers: { 'X-Note': 'ça va' } }).errors, []);
});

t.test('reserved headers are refused in any case, at root and per personalization', async (t) => {
  const reserved = [
    'Authentication-Results', 'bcc', 'CC', 'content-transfer-encoding', 'Content-Type', 'DKIM-SIGNATURE', 'from',
    'Message-Id', 'RECEIVED', 'reply-to', 'Subject', 'tO', 'Return-Path', 'date', 'MIME-Version', 'Sender',
    'list-UNSUBSCRIBE-post', 'Content-Disposition', 'Content-ID', 'DomainKey-Signature', 'ARC-Seal', 'X-Sluice-Account',
    'x-sluice-anything',
  ];
  for (const name of reserved) {
    t.same(problems({ ...base(), headers: { [name]: 'x' } }).errors, [`headers.${name}: is a reserved header and cannot be set`], name);
    t.same(problems(withP({ headers: { [name]: 'x' } })).errors, [`personalizations[0].headers.${name}: is a reserved header and cannot be set`], name);
  }
  // the one-click promise is ours to make, even with the RFC 8058 value
  t.same(problems(withP({ headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } })).errors, [
    'personalizations[0].headers.List-Unsubscribe-Post: is a reserved header and cannot be set',
  ]);
  t.same(problems({ ...base(), headers: { 'X-Sluicey': 'ok', 'In-Reply-To': '<a@b>', 'List-Unsubscribe': '<mailto:u@x.test>' } }).errors, []);
});

t.test('DKIM rules', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  const der = pair.privateKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  t.same(problems({ ...base(), dkim_domain: 'sender.test' }).errors, ['dkim_selector: is required when dkim_domain is set']);
  t.same(problems({ ...base(), dkim_private_key: der }).errors, ['dkim_private_key: requires dkim_domain and dkim_selector']);
  t.same(problems({ ...base(), dkim_selector: 's1', dkim_private_key: der }).errors, ['dkim_private_key: requires dkim_domain and dkim_selector']);
  t.same(problems({ ...base(), dkim_selector: 's1' }).errors, [], 'selector alone: domain from from');
  t.same(problems({ ...base(), dkim_domain: 'sender.test', dkim_selector: 's1', dkim_private_key: der }).errors, [], 'bare base64 DER key');
  t.same(problems({ ...base(), dkim_domain: 'sender.test', dkim_selector: 's1', dkim_private_key: 'bm90IGEga2V5' }).errors, [
    'dkim_private_key: is not an RSA private key (PEM, or base64 DER)',
  ]);
  t.same(problems({ ...base(), dkim_domain: 'not a domain', dkim_selector: 'bad selector' }).errors, [
    'dkim_domain: invalid domain',
    'dkim_selector: invalid selector',
  ]);
  t.same(problems(withP({ dkim_domain: 'sender.test' })).errors, ['personalizations[0].dkim_selector: is required when dkim_domain is set']);
  t.same(problems(withP({ dkim_private_key: der, dkim_selector: 's' })).errors, ['personalizations[0].dkim_private_key: requires dkim_domain and dkim_selector']);
  t.equal(problems({ ...base(), dkim_selector: 'x'.repeat(64) }).status, 400, 'selector over 63');
});

t.test('content: text/plain and text/html only, once each; mustache must parse', async (t) => {
  for (const type of ['image/png', 'TEXT/PLAIN', 'text/html; charset=utf-8', '']) {
    t.same(problems({ ...base(), content: [{ type, value: 'x' }] }), { status: 400, errors: ['content[0].type: must be text/plain or text/html'] }, type);
  }
  t.same(problems({ ...base(), content: [{ type: 'text/plain', value: 'a' }, { type: 'text/html', value: 'b' }, { type: 'text/plain', value: 'c' }] }).errors, [
    'content[2].type: text/plain given more than once',
  ]);
  t.same(problems({ ...base(), content: [{ type: 'text/html', value: '{{#open}}x', template_type: 'mustache' }] }).errors, [
    'content[0].value: invalid mustache template: Unclosed section "open" at 10',
  ]);
  t.same(problems({ ...base(), content: [{ type: 'text/html', value: '{{#open}}x' }] }).errors, [], 'not a template: left alone');
  t.same(problems({ ...base(), subject: 'Hi {{#x}}', content: [{ type: 'text/plain', value: 'v', template_type: 'mustache' }] }).errors, [
    'subject: invalid mustache template: Unclosed section "x" at 9',
  ]);
  // template data must not put a line break into the rendered subject
  const body = withP({ dynamic_template_data: { name: 'x\r\nBcc: evil@x.test' } }, { subject: 'Hi {{name}}', content: [{ type: 'text/plain', value: '{{name}}', template_type: 'mustache' }] });
  t.same(problems(body).errors, ['personalizations[0].dynamic_template_data: renders CR, LF or control characters into the subject']);
});

t.test('attachments: base64, unique content_id, safe filename and type', async (t) => {
  const att = (a: Json) => problems({ ...base(), attachments: [a] }).errors;
  t.same(att({ content: 'not base64!', filename: 'a' }), ['attachments[0].content: must be valid base64']);
  t.same(att({ content: 'abc', filename: 'a' }), ['attachments[0].content: must be valid base64']);
  t.same(att({ content: 'a=bc', filename: 'a' }), ['attachments[0].content: must be valid base64']);
  t.same(att({ content: '', filename: 'empty.txt' }), []);
  t.same(att({ content: 'aGk=', filename: 'a\r\nContent-Type: text/html' }), ['attachments[0].filename: must not contain CR, LF or control characters']);
  t.same(att({ content: 'aGk=', filename: 'a', type: 'text/plain\r\nX: y' }), ['attachments[0].type: must be a MIME type such as image/png']);
  t.same(att({ content: 'aGk=', filename: 'a', type: 'nonsense' }), ['attachments[0].type: must be a MIME type such as image/png']);
  t.same(att({ content: 'aGk=', filename: 'a', content_id: 'a b' }), ['attachments[0].content_id: must be printable ASCII without spaces, "<" or ">"']);
  const dup = problems({
    ...base(),
    attachments: [
      { content: 'aGk=', filename: 'a.png', content_id: 'logo' },
      { content: 'aGk=', filename: 'b.png', content_id: 'other' },
      { content: 'aGk=', filename: 'c.png', content_id: 'logo' },
    ],
  });
  t.same(dup.errors, ['attachments[2].content_id: must be unique']);
});

t.test('non-transactional: exactly one recipient per personalization', async (t) => {
  t.same(problems(withP({}, { transactional: false })).errors, []);
  const msg = 'personalizations[0]: non-transactional messages must have exactly one recipient (to, cc and bcc) per personalization';
  t.same(problems(withP({ bcc: [{ email: 'x@rcpt.test' }] }, { transactional: false })).errors, [msg]);
  t.same(problems(withP({ to: [{ email: 'a@rcpt.test' }, { email: 'b@rcpt.test' }] }, { transactional: false })).errors, [msg]);
  t.same(problems(withP({ cc: [{ email: 'x@rcpt.test' }] }, { transactional: true })).errors, [], 'transactional: any number');
  t.same(problems(withP({ cc: [{ email: 'x@rcpt.test' }] }, { transactional: null })).errors, [], 'null means default (transactional)');
});

t.test('SendBody is the schema type', async (t) => {
  const b: SendBody = { personalizations: [{ to: [{ email: 'a@b.test' }] }], from: { email: 'c@d.test' }, subject: 's', content: [{ type: 'text/plain', value: 'v' }] };
  t.same(validateSendBody(b), []);
});
