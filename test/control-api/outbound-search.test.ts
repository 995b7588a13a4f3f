// Checks POST /outbound/v1/search over HTTP: filters, date and paging rules, notice, result shape, tenancy, 503, version.
import type { Test } from 'tap';
import type { NewSmtpLogRow, SmtpLogAttempt } from '../../storage/ports/smtp-log.js';
import type { Store } from '../../storage/ports/store.js';
import { message } from '../helpers/accept-record.js';
import { onBackends, type BackendName } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';

const DAY = 86_400_000;
const NOTICE = 'Results cover only the last 3 days; send start_date and end_date to search another range.';
const SEARCH = '/outbound/v1/search';

let nextId = 1;
function row(accountId: number, over: Partial<NewSmtpLogRow> = {}): NewSmtpLogRow {
  const id = nextId++;
  return {
    delivery_id: id,
    account_id: accountId,
    message_id: `msg-${id}@shop.example`,
    request_id: `req-${id}`,
    sender: 'noreply@shop.example',
    rcpt: `user${id}@dest.example`,
    auth: 'shop',
    upstream: '192.0.2.1',
    upstream_hostname: 'app.shop.example',
    sender_id: 'shop|1',
    subject: `Receipt ${id}`,
    size: 2048,
    spam_disposition: 'BULK',
    virus_disposition: 'MEDIUM',
    created_at: 0,
    ...over,
  };
}

/**
 * Writes log rows as the queue does, on either backend: each an accepted message whose one recipient was dropped (no
 * worker picks it up), with `attempt` written over its attempt columns when given. The row's own delivery_id only
 * names it in its message id (msg-N), which the search answers carry.
 */
function logWriter(store: Store) {
  const insert = async (r: NewSmtpLogRow, attempt?: SmtpLogAttempt) => {
    const { delivery_id: _id, ...row } = r;
    const rec = await message(store, r.account_id, [r.rcpt], r.created_at);
    const deliveries = rec.deliveries.map((d) => ({ ...d, state: 'dropped' as const, status: '5.7.1', response: 'seeded', log: { row, ...(attempt ? { attempt } : {}) } }));
    await store.queue.accept([{ ...rec, deliveries }]);
  };
  return {
    insert,
    /** One after another: their delivery ids follow the list (the search's tie-break). */
    async insertRows(rows: readonly NewSmtpLogRow[]) {
      for (const r of rows) await insert(r);
    },
  };
}

/** A stack with a parent (two sub-accounts) and an unrelated parent, each with an api key. */
async function world(t: Test, backend: BackendName, env: Record<string, string> = {}) {
  const stack = await startStack(t, { backend, env });
  const log = logWriter(stack.store);
  const parent = await stack.createAccount('parentco');
  const stranger = await stack.createAccount('strangerco');
  const sub = async (handle: string) => {
    const created = await stack.api('POST', '/tx/v1/sub-account', { key: parent.key, body: { handle, company_name: 'Sub' } });
    t.equal(created.status, 201);
    const key = await stack.api('POST', `/tx/v1/sub-account/${handle}/api-key`, { key: parent.key });
    t.equal(key.status, 201);
    return { handle, key: key.body.key as string, id: (await stack.accounts.findByHandle(handle) as { id: number }).id };
  };
  const subA = await sub('subalpha');
  const subB = await sub('subbeta');
  return { stack, log, parent, stranger, subA, subB };
}

async function search(stack: PortStack, key: string, body?: unknown, query = '') {
  return stack.api('POST', `${SEARCH}${query}`, { key, ...(body === undefined ? {} : { body }) });
}

const deliveryIds = (res: { body: any }) =>
  (res.body.results as { message_id: string }[]).map((r) => Number(/msg-(\d+)@/.exec(r.message_id)?.[1]));

onBackends('result entries carry every field with the seed types; the default window adds the notice', async (t, backend) => {
  const { stack, log, parent } = await world(t, backend);
  const now = stack.clock.now();
  const r = row(parent.id, { created_at: now - 60_000 });
  await log.insert(r, {
    lastcmd: 'DATA',
    rspcode: 250,
    rspmsg: '250 2.0.0 Ok: queued as 4F1',
    delivered: true,
    updated_at: now - 50_000,
  });
  const pending = row(parent.id, { created_at: now - 120_000, auth: null, subject: null, upstream_hostname: null });
  await log.insert(pending);

  const res = await search(stack, parent.key, {});
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), ['notice', 'results']);
  t.equal(res.body.notice, NOTICE);
  t.equal(res.body.results.length, 2);
  const [first, second] = res.body.results;
  t.same(first, {
    '@timestamp': new Date(now - 60_000).toISOString(),
    message_id: r.message_id,
    request_id: r.request_id,
    sender: r.sender,
    rcpt: r.rcpt,
    auth: 'shop',
    upstream: '192.0.2.1',
    upstream_hostname: 'app.shop.example',
    sender_id: 'shop|1',
    subject: r.subject,
    size: 2048,
    lastcmd: 'DATA',
    rspcode: '250',
    rspmsg: '250 2.0.0 Ok: queued as 4F1',
    delivered: 'Y',
    spam_disposition: 'BULK',
    virus_disposition: 'MEDIUM',
  });
  t.equal(typeof first.rspcode, 'string', 'rspcode is a string on the wire');
  t.equal(typeof first.size, 'number');
  t.notOk('remediation_options' in first, 'no sender can be delisted yet');
  // Before any attempt: strings stay strings, never null.
  const empty = { rspcode: '', lastcmd: '', rspmsg: '', auth: '', subject: '', upstream_hostname: '' };
  t.match(second, { delivered: 'N', ...empty });

  const doc = await stack.api('GET', '/openapi.json');
  const op = doc.body.paths[SEARCH].post;
  t.same(op.parameters.map((p: { name: string }) => p.name), ['start_at', 'count'], 'documented from the same schema');
  t.ok(op.responses['200'].content['application/json'].schema.properties.results.items.properties['@timestamp']);

  const noBody = await stack.api('POST', SEARCH, { key: parent.key });
  t.equal(noBody.status, 200, 'the body is optional');
  t.equal(noBody.body.notice, NOTICE);
  t.equal(noBody.body.results.length, 2);
});

onBackends('each filter alone, case-insensitive addresses, subject substring, delivered, rspcode', async (t, backend) => {
  const { stack, log, parent } = await world(t, backend);
  const now = stack.clock.now();
  const plain = row(parent.id, { created_at: now - 3000 });
  const special = row(parent.id, {
    created_at: now - 2000,
    sender: 'Billing@Shop.Example',
    rcpt: 'Carol.Smith@Dest.Example',
    auth: 'api-key-7',
    upstream: '198.51.100.9',
    upstream_hostname: 'Worker9.Shop.Example',
    sender_id: 'shop|42',
    subject: 'Your Invoice #8812 is ready',
    spam_disposition: 'CONFIRMED',
    virus_disposition: 'CONFIRMED',
  });
  const ok = { lastcmd: 'DATA', rspcode: 250, rspmsg: 'ok', delivered: true, updated_at: now };
  await log.insert(plain, ok);
  await log.insert(special, {
    lastcmd: 'RCPT TO',
    rspcode: 550,
    rspmsg: '550 5.1.1 no such user',
    delivered: false,
    updated_at: now,
  });
  const s = special.delivery_id;
  const p = plain.delivery_id;
  const cases: [string, unknown, number[]][] = [
    ['message_id', special.message_id, [s]],
    ['request_id', plain.request_id, [p]],
    ['sender', 'billing@shop.example', [s]],
    ['sender', 'NOREPLY@SHOP.EXAMPLE', [p]],
    ['sender', 'billing@shop', []],
    ['rcpt', 'carol.smith@dest.example', [s]],
    ['rcpt', 'CAROL.SMITH@DEST.EXAMPLE', [s]],
    ['auth', 'api-key-7', [s]],
    ['upstream', '198.51.100.9', [s]],
    ['upstream_hostname', 'worker9.shop.example', [s]],
    ['sender_id', 'shop|42', [s]],
    ['sender_id', 'shop|4', []],
    ['subject', 'invoice #8812', [s]],
    ['subject', 'RECEIPT', [p]],
    ['subject', 'Receipts', []],
    ['delivered', 'Y', [p]],
    ['delivered', 'N', [s]],
    ['delivered', 'n', [s]],
    ['spam_disposition', 'CONFIRMED', [s]],
    ['virus_disposition', 'MEDIUM', [p]],
    ['rspcode', 550, [s]],
    ['rspcode', 250, [p]],
    ['rspcode', 421, []],
  ];
  for (const [field, value, expected] of cases) {
    const res = await search(stack, parent.key, { [field]: value });
    t.equal(res.status, 200, `${field}=${value}`);
    t.same(deliveryIds(res), expected, `${field}=${JSON.stringify(value)}`);
  }
  const both = await search(stack, parent.key, { sender: 'billing@shop.example', rspcode: 250 });
  t.same(deliveryIds(both), [], 'filters combine with AND');

  for (const [body, field] of [
    [{ delivered: 'X' }, 'delivered'],
    [{ rspcode: 'abc' }, 'rspcode'],
    [{ rspcode: 55.5 }, 'rspcode'],
    [{ sender: 42 }, 'sender'],
  ] as const) {
    const res = await search(stack, parent.key, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.code, 400);
    t.match(res.body.errors[0], new RegExp(`^${field}: `));
    t.equal(res.body.message, res.body.errors[0]);
  }
});

onBackends('every seed filter filters: lastcmd and rspmsg; dispositions and unknown fields are checked', async (t, backend) => {
  const { stack, log, parent } = await world(t, backend);
  const now = stack.clock.now();
  const refused = row(parent.id, { created_at: now - 3000 });
  const delivered = row(parent.id, { created_at: now - 2000 });
  const pending = row(parent.id, { created_at: now - 1000, spam_disposition: undefined, virus_disposition: undefined });
  await log.insert(refused, {
    lastcmd: 'RCPT TO',
    rspcode: 550,
    rspmsg: '550 5.1.1 <carol@dest.example>: Recipient address rejected: User unknown (100%)',
    delivered: false,
    updated_at: now,
  });
  await log.insert(delivered, {
    lastcmd: 'DATA',
    rspcode: 250,
    rspmsg: '250 2.0.0 Ok: queued as 4F1',
    delivered: true,
    updated_at: now,
  });
  await log.insert(pending);
  const [r, d, p] = [refused.delivery_id, delivered.delivery_id, pending.delivery_id];
  const cases: [string, unknown, number[]][] = [
    ['lastcmd', 'RCPT TO', [r]],
    ['lastcmd', 'rcpt to', [r]],
    ['lastcmd', 'DATA', [d]],
    ['lastcmd', 'MAIL FROM', []],
    ['lastcmd', 'RCPT', []],
    ['rspmsg', 'user unknown', [r]],
    ['rspmsg', 'QUEUED AS 4F1', [d]],
    ['rspmsg', '100%', [r]],
    ['rspmsg', '_', []],
    ['rspmsg', 'no such text', []],
    ['rspmsg', '', [p, d, r]],
    ['spam_disposition', 'UNKNOWN', [p]],
    ['spam_disposition', 'BULK', [d, r]],
    ['virus_disposition', 'UNKNOWN', [p]],
    ['virus_disposition', 'CONFIRMED', []],
  ];
  for (const [field, value, expected] of cases) {
    const res = await search(stack, parent.key, { [field]: value });
    t.equal(res.status, 200, `${field}=${value}`);
    t.same(deliveryIds(res), expected, `${field}=${JSON.stringify(value)}`);
  }
  t.same(deliveryIds(await search(stack, parent.key, { lastcmd: 'RCPT TO', rspmsg: 'queued' })), [], 'AND');

  for (const [body, message] of [
    [{ spam_disposition: 'BOGUS' }, 'spam_disposition: must be one of CONFIRMED, SUSPECT, BULK, UNKNOWN'],
    [{ spam_disposition: 'spam' }, 'spam_disposition: must be one of CONFIRMED, SUSPECT, BULK, UNKNOWN'],
    [{ virus_disposition: 'VIRUS' }, 'virus_disposition: must be one of CONFIRMED, HIGH, MEDIUM, UNKNOWN'],
    [{ last_cmd: 'DATA' }, 'last_cmd: unknown field'],
    [{ count: 100 }, 'count: is a query parameter (?count=…), not a body field'],
  ] as const) {
    const res = await search(stack, parent.key, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.same(res.body, { code: 400, errors: [message], message });
  }
});

onBackends('REST sends log the sending identity as sender_id; the service reports version 0.7.0', async (t, backend) => {
  const { stack, parent, subA } = await world(t, backend, { SLUICE_OUTBOUND_LOCKDOWN: 'off' });
  const mail = (to: string) => ({
    personalizations: [{ to: [{ email: to }] }],
    from: { email: 'app@shop.example' },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'Hi' }],
  });
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key: parent.key, body: mail('a@dest.example') })).status, 202);
  t.equal((await stack.api('POST', '/tx/v1/send', { key: subA.key, body: mail('b@dest.example') })).status, 202);
  // The seed's form: account handle, then (no authenticated user behind an API key) the From address.
  const own = await search(stack, parent.key, { sender_id: 'parentco|x-authuser|app@shop.example' });
  t.same(own.body.results.map((x: { rcpt: string; sender_id: string }) => [x.rcpt, x.sender_id]), [['a@dest.example', 'parentco|x-authuser|app@shop.example']]);
  const sub = await search(stack, parent.key, { sender_id: 'subalpha|x-authuser|app@shop.example' });
  t.same(sub.body.results.map((x: { rcpt: string; sender_id: string }) => [x.rcpt, x.sender_id]), [['b@dest.example', 'subalpha|x-authuser|app@shop.example']]);
  t.same((await search(stack, parent.key, { sender_id: 'parentco' })).body.results, [], 'the handle alone is not an identity');

  // Where the version shows: a header on every /outbound/v1 answer (errors too) and the OpenAPI document.
  t.equal(own.headers.get('x-service-version'), '0.7.0');
  t.equal((await search(stack, parent.key, { rspcode: 'x' })).headers.get('x-service-version'), '0.7.0');
  t.equal((await stack.api('GET', '/outbound/v1/nothing')).headers.get('x-service-version'), '0.7.0');
  t.equal((await stack.api('GET', '/tx/v1/sub-account', { key: parent.key })).headers.get('x-service-version'), null);
  const doc = (await stack.api('GET', '/openapi.json')).body;
  t.same(doc.info['x-service-versions'], { outbound: '0.7.0' });
  t.match(doc.tags, [{ name: 'outbound', 'x-service-version': '0.7.0' }]);
});

onBackends('date rules: both or neither, yyyy-mm-dd, start before the (exclusive) end; neither means the last 3 days', async (t, backend) => {
  const { stack, log, parent } = await world(t, backend);
  const now = stack.clock.now(); // 2026-11-22T12:00Z
  const rows = [
    row(parent.id, { created_at: now - 1000 }), // today
    row(parent.id, { created_at: now - 3 * DAY + 1000 }), // inside the default window
    row(parent.id, { created_at: now - 3 * DAY - 1000 }), // just outside it
    row(parent.id, { created_at: Date.UTC(2026, 10, 1, 0, 0, 0) }), // 2026-11-01 00:00
    row(parent.id, { created_at: Date.UTC(2026, 10, 5, 23, 59, 59) }), // 2026-11-05 23:59:59
    row(parent.id, { created_at: Date.UTC(2026, 10, 6, 0, 0, 0) }), // 2026-11-06 00:00
  ];
  await log.insertRows(rows);
  const [today, inside, outside, nov1, nov5, nov6] = rows.map((r) => r.delivery_id);

  const def = await search(stack, parent.key, {});
  t.equal(def.status, 200);
  t.equal(def.body.notice, NOTICE);
  t.same(deliveryIds(def), [today, inside], 'rows older than 3 days by the injected clock are excluded');

  stack.clock.advance(2 * DAY);
  t.same(deliveryIds(await search(stack, parent.key, {})), [today], 'the window moves with the clock');

  const range = await search(stack, parent.key, { start_date: '2026-11-01', end_date: '2026-11-06' });
  t.equal(range.status, 200);
  t.notOk('notice' in range.body, 'no notice when dates are given');
  t.same(deliveryIds(range), [nov5, nov1], 'start day from 00:00, up to the end day\'s 00:00 (exclusive)');
  const wide = await search(stack, parent.key, { start_date: '2026-10-01', end_date: '2026-12-31' });
  t.same(deliveryIds(wide), [today, inside, outside, nov6, nov5, nov1]);
  const oneDay = await search(stack, parent.key, { start_date: '2026-11-06', end_date: '2026-11-07' });
  t.same(deliveryIds(oneDay), [nov6], 'a one-day range: that day and the next');
  // The specification: start_date is "before end_date"; the same date twice is an empty range, refused.
  const same = await search(stack, parent.key, { start_date: '2026-11-06', end_date: '2026-11-06' });
  t.equal(same.status, 400, 'equal dates');
  t.match(same.body.errors[0], /^start_date: must be before end_date/);

  const bad: [unknown, string][] = [
    [{ start_date: '2026-11-01' }, 'end_date'],
    [{ end_date: '2026-11-05' }, 'start_date'],
    [{ start_date: '2026/11/01', end_date: '2026-11-05' }, 'start_date'],
    [{ start_date: '2026-11-01', end_date: '5 Nov 2026' }, 'end_date'],
    [{ start_date: '2026-11-01T00:00:00Z', end_date: '2026-11-05' }, 'start_date'],
    [{ start_date: '2026-02-30', end_date: '2026-03-05' }, 'start_date'],
    [{ start_date: '2026-11-01', end_date: '2026-13-01' }, 'end_date'],
    [{ start_date: '2026-11-05', end_date: '2026-11-01' }, 'start_date'],
  ];
  for (const [body, field] of bad) {
    const res = await search(stack, parent.key, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.same(Object.keys(res.body).sort(), ['code', 'errors', 'message']);
    t.equal(res.body.code, 400);
    t.match(res.body.errors[0], new RegExp(`^${field}: `), `names ${field}`);
  }
});

onBackends('paging: defaults, limits and newest first', async (t, backend) => {
  const { stack, log, parent } = await world(t, backend);
  const now = stack.clock.now();
  const rows = Array.from({ length: 25 }, (_, i) => row(parent.id, { created_at: now - 100_000 + i * 1000 }));
  await log.insertRows(rows);
  const newestFirst = rows.map((r) => r.delivery_id).reverse();

  const first = await search(stack, parent.key, {});
  t.same(deliveryIds(first), newestFirst.slice(0, 20), 'start_at 0 and count 20 by default, newest first');
  const rest = await search(stack, parent.key, {}, '?start_at=20');
  t.same(deliveryIds(rest), newestFirst.slice(20));
  const mid = await search(stack, parent.key, {}, '?start_at=3&count=4');
  t.same(deliveryIds(mid), newestFirst.slice(3, 7));
  const max = await search(stack, parent.key, {}, '?count=100');
  t.equal(max.body.results.length, 25);
  const edge = await search(stack, parent.key, {}, '?start_at=9899&count=100');
  t.equal(edge.status, 200, 'start_at + count = 9999 is allowed');
  t.same(edge.body.results, []);

  const bad: [string, string][] = [
    ['?count=101', 'count'],
    ['?count=0', 'count'],
    ['?count=abc', 'count'],
    ['?start_at=-1', 'start_at'],
    ['?start_at=9900&count=100', 'start_at'],
    ['?start_at=9980', 'start_at'],
  ];
  for (const [query, field] of bad) {
    const res = await search(stack, parent.key, {}, query);
    t.equal(res.status, 400, query);
    t.equal(res.body.code, 400);
    t.match(res.body.errors[0], new RegExp(`^${field}: `), `${query} names ${field}`);
  }
});

onBackends('tenancy: a sub-account sees only its rows; a parent sees its own and its sub-accounts', async (t, backend) => {
  const { stack, log, parent, stranger, subA, subB } = await world(t, backend);
  const now = stack.clock.now();
  const mk = (id: number, ago: number) => row(id, { created_at: now - ago, rcpt: 'shared@dest.example' });
  const rows = {
    parent: mk(parent.id, 5000),
    a: mk(subA.id, 4000),
    b: mk(subB.id, 3000),
    stranger: mk(stranger.id, 2000),
  };
  await log.insertRows(Object.values(rows));
  const id = (k: keyof typeof rows) => rows[k].delivery_id;

  t.same(deliveryIds(await search(stack, parent.key, {})), [id('b'), id('a'), id('parent')]);
  t.same(deliveryIds(await search(stack, subA.key, {})), [id('a')]);
  t.same(deliveryIds(await search(stack, subB.key, {})), [id('b')]);
  t.same(deliveryIds(await search(stack, stranger.key, {})), [id('stranger')]);
  // Naming another tenant's message explicitly finds nothing.
  t.same(deliveryIds(await search(stack, subA.key, { message_id: rows.parent.message_id })), []);
  t.same(deliveryIds(await search(stack, subA.key, { message_id: rows.b.message_id })), []);
  t.same(deliveryIds(await search(stack, parent.key, { message_id: rows.stranger.message_id })), []);
  const shared = await search(stack, parent.key, { rcpt: 'SHARED@dest.example' });
  t.same(deliveryIds(shared), [id('b'), id('a'), id('parent')]);

  const none = await stack.api('POST', SEARCH, { body: {} });
  t.equal(none.status, 401);
  t.same(Object.keys(none.body).sort(), ['code', 'errors', 'message']);
  const inboundKey = await stack.accounts.createApiKey(parent.id, 'inbound', now);
  if (!inboundKey.ok) throw new Error('key');
  const wrongScope = await search(stack, inboundKey.value.key, {});
  t.equal(wrongScope.status, 403);
  t.equal(wrongScope.body.code, 403);
});

onBackends('more than 100 searches per second from one customer get 503', async (t, backend) => {
  const { stack, parent, stranger } = await world(t, backend);
  const statuses: number[] = [];
  for (let i = 0; i < 101; i++) statuses.push((await search(stack, parent.key, {})).status);
  t.same(statuses.slice(0, 100), new Array(100).fill(200), 'the first 100 in one instant pass');
  t.equal(statuses[100], 503);
  const limited = await search(stack, parent.key, {});
  t.equal(limited.status, 503);
  t.same(Object.keys(limited.body).sort(), ['code', 'errors', 'message']);
  t.equal(limited.body.code, 503);
  t.equal((await search(stack, stranger.key, {})).status, 200, 'another customer is not limited');
  stack.clock.advance(1000);
  t.equal((await search(stack, parent.key, {})).status, 200, 'a second later the bucket has refilled');
});
