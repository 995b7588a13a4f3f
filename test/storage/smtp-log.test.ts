// Checks the smtp_log repository against a real SQLite file: writes, attempt updates, filters, order, paging, plans.
import t, { type Test } from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../../storage/sqlite/database.js';
import { createSmtpLogStore } from '../../storage/sqlite/smtp-log.js';
import { secondProbeRows, SUBJECT_PROBE_MAX_ROWS, SUBJECT_PROBE_ROWS } from '../../storage/sqlite/smtp-log-search.js';
import { type NewSmtpLogRow, type SmtpLogFilters } from '../../storage/ports/smtp-log.js';
import { tempDir } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 20, 0, 0, 0);
const ALL: SmtpLogFilters = { since: 0, until: Number.MAX_SAFE_INTEGER };

function setup(t: Test, accounts = 2) {
  const db: Db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const store = createAccountStore(db);
  const ids: number[] = [];
  for (let i = 0; i < accounts; i++) {
    const res = store.createAccount({ handle: `acct${i}x`, companyName: null, parentId: null, now: T0 });
    if (!res.ok) throw new Error('account');
    ids.push(res.value.id);
  }
  return { db, log: createSmtpLogStore(db), ids };
}

let nextId = 1;
function row(accountId: number, over: Partial<NewSmtpLogRow> = {}): NewSmtpLogRow {
  const id = nextId++;
  return {
    delivery_id: id,
    account_id: accountId,
    message_id: `m${id}@example.test`,
    request_id: `r${id}`,
    sender: 'Alerts@Shop.example',
    rcpt: `user${id}@dest.example`,
    auth: 'shop',
    upstream: '192.0.2.10',
    upstream_hostname: 'App1.Shop.example',
    sender_id: 'shop|1',
    subject: `Order ${id} shipped`,
    size: 1000 + id,
    created_at: T0 + id * 1000,
    ...over,
  };
}

const ids = (rows: { delivery_id: number }[]) => rows.map((r) => r.delivery_id);

t.test('a new row starts undelivered with empty attempt columns; updateAttempt overwrites them', async (t) => {
  const { log, ids: [a] } = setup(t);
  const r = row(a as number, { spam_disposition: undefined });
  log.insertRow(r);
  t.match(log.findByDeliveryId(r.delivery_id), {
    delivery_id: r.delivery_id,
    lastcmd: null,
    rspcode: null,
    rspmsg: null,
    delivered: false,
    spam_disposition: 'UNKNOWN',
    virus_disposition: 'UNKNOWN',
    created_at: r.created_at,
    updated_at: r.created_at,
  });
  t.throws(() => log.insertRow(r), /UNIQUE|PRIMARY KEY/, 'a delivery has one log row');

  const at = r.created_at + 5000;
  const deferred = { lastcmd: 'RCPT TO', rspcode: 451, rspmsg: '451 4.7.1 later', delivered: false, updated_at: at };
  const delivered = { lastcmd: 'DATA', rspcode: 250, rspmsg: '250 2.0.0 ok', delivered: true, updated_at: at + 1 };
  t.equal(log.updateAttempt(r.delivery_id, deferred), true);
  t.equal(log.updateAttempt(r.delivery_id, delivered), true);
  t.match(log.findByDeliveryId(r.delivery_id), { ...delivered, delivered: true });
  t.equal(log.updateAttempt(999_999, deferred), false, 'no such delivery');
});

t.test('search scopes by account, orders newest first (ties by delivery id) and pages', async (t) => {
  const { log, ids: [a, b] } = setup(t);
  const rows = [
    row(a as number, { created_at: T0 + 1000 }),
    row(b as number, { created_at: T0 + 2000 }),
    row(a as number, { created_at: T0 + 3000 }),
    row(a as number, { created_at: T0 + 3000 }),
    row(b as number, { created_at: T0 + 2500 }),
  ];
  log.insertRows(rows);
  const [r0, r1, r2, r3, r4] = rows.map((r) => r.delivery_id);
  t.same(ids(log.search([a as number], ALL, { startAt: 0, count: 10 })), [r3, r2, r0]);
  t.same(ids(log.search([b as number], ALL, { startAt: 0, count: 10 })), [r4, r1]);
  t.same(ids(log.search([a as number, b as number], ALL, { startAt: 0, count: 10 })), [r3, r2, r4, r1, r0], 'merged');
  t.same(ids(log.search([a as number, b as number], ALL, { startAt: 1, count: 2 })), [r2, r4]);
  t.same(ids(log.search([a as number, b as number], ALL, { startAt: 5, count: 2 })), []);
  t.same(log.search([], ALL, { startAt: 0, count: 10 }), [], 'no accounts, no rows');
  // since inclusive, until exclusive
  const range = { since: T0 + 2000, until: T0 + 3000 };
  t.same(ids(log.search([a as number, b as number], range, { startAt: 0, count: 10 })), [r4, r1]);
});

t.test('more accounts than the merge handles fall back to one IN scan with the same order', async (t) => {
  const { log, ids: accounts } = setup(t, 70);
  const rows = accounts.map((id, i) => row(id, { created_at: T0 + ((i * 37) % 70) * 1000 }));
  log.insertRows(rows);
  const expected = [...rows].sort((x, y) => y.created_at - x.created_at || y.delivery_id - x.delivery_id);
  t.same(ids(log.search(accounts, ALL, { startAt: 3, count: 5 })), ids(expected.slice(3, 8)));
  t.same(ids(log.search(accounts.slice(0, 10), ALL, { startAt: 0, count: 100 })).length, 10);
});

t.test('each filter matches exactly what it should', async (t) => {
  const { log, ids: [a] } = setup(t);
  const acct = a as number;
  const base = row(acct, { subject: 'Welcome aboard' });
  const other = row(acct, {
    sender: 'billing@shop.example',
    rcpt: 'Bob@Dest.example',
    auth: 'api-key-1',
    upstream: '198.51.100.7',
    upstream_hostname: 'worker.shop.example',
    sender_id: 'shop|2',
    subject: 'Invoice 100% paid_in_full',
    spam_disposition: 'CONFIRMED',
    virus_disposition: 'CONFIRMED',
  });
  log.insertRows([base, other]);
  const bounced = { lastcmd: 'RCPT TO', rspcode: 550, rspmsg: '550 5.1.1 unknown', delivered: false, updated_at: T0 };
  log.updateAttempt(other.delivery_id, bounced);
  log.updateAttempt(base.delivery_id, { lastcmd: 'DATA', rspcode: 250, rspmsg: 'ok', delivered: true, updated_at: T0 });
  const find = (f: Partial<SmtpLogFilters>) => ids(log.search([acct], { ...ALL, ...f }, { startAt: 0, count: 10 }));
  const o = other.delivery_id;
  const b = base.delivery_id;
  t.same(find({ messageId: other.message_id }), [o]);
  t.same(find({ sendRequestId: base.request_id }), [b]);
  t.same(find({ sender: 'BILLING@SHOP.EXAMPLE' }), [o], 'sender ignores case');
  t.same(find({ sender: 'billing@shop' }), [], 'sender is not a substring match');
  t.same(find({ rcpt: 'bob@dest.example' }), [o], 'rcpt ignores case');
  t.same(find({ auth: 'api-key-1' }), [o]);
  t.same(find({ upstream: '198.51.100.7' }), [o]);
  t.same(find({ upstreamHostname: 'WORKER.shop.example' }), [o], 'host names ignore case');
  t.same(find({ senderId: 'shop|1' }), [b]);
  t.same(find({ subject: 'ABOARD' }), [b], 'subject is a case-insensitive substring');
  t.same(find({ subject: '100% paid_in' }), [o]);
  t.same(find({ subject: '1000 paid' }), [], '% is literal');
  t.same(find({ subject: 'paid_' }), [o]);
  t.same(find({ subject: 'paidXin' }), [], '_ is literal');
  t.same(find({ delivered: true }), [b]);
  t.same(find({ delivered: false }), [o]);
  t.same(find({ spamDisposition: 'CONFIRMED' }), [o]);
  t.same(find({ virusDisposition: 'UNKNOWN' }), [b]);
  t.same(find({ rspcode: 550 }), [o]);
  t.same(find({ rspcode: 250, sender: 'alerts@shop.example', delivered: true }), [b], 'filters combine with AND');
  t.same(find({ rspcode: 550, sender: 'alerts@shop.example' }), []);
});

t.test('each filter is served by its own index, never by a full scan', async (t) => {
  const { db, log, ids: [a, b] } = setup(t);
  const indexes = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'smtp_log'");
  const names = (indexes.all() as { name: string }[]).map((r) => r.name);
  const cases: [Partial<SmtpLogFilters>, string][] = [
    [{}, 'smtp_log_account_time'],
    [{ messageId: 'x' }, 'smtp_log_message'],
    [{ sendRequestId: 'x' }, 'smtp_log_request'],
    [{ sender: 'x' }, 'smtp_log_sender'],
    [{ rcpt: 'x', sender: 'y', subject: 'z' }, 'smtp_log_rcpt'],
    [{ auth: 'x' }, 'smtp_log_auth'],
    [{ upstream: 'x' }, 'smtp_log_upstream'],
    [{ upstreamHostname: 'x' }, 'smtp_log_upstream_hostname'],
    [{ senderId: 'x' }, 'smtp_log_sender_id'],
    [{ rspcode: 550 }, 'smtp_log_rspcode'],
    [{ spamDisposition: 'UNKNOWN' }, 'smtp_log_spam'],
    [{ virusDisposition: 'UNKNOWN' }, 'smtp_log_virus'],
    [{ delivered: false }, 'smtp_log_undelivered'],
    [{ delivered: true, subject: 'x' }, 'smtp_log_account_time'],
  ];
  for (const [filters, index] of cases) {
    t.ok(names.includes(index), `${index} exists`);
    for (const accounts of [[a as number], [a as number, b as number]]) {
      const plan = log.explainSearch(accounts, { ...ALL, ...filters }, { startAt: 0, count: 20 });
      const scans = plan.filter((line) => / smtp_log /.test(line));
      t.ok(scans.length === accounts.length || scans.length === 1, `${JSON.stringify(filters)}: one scan per account`);
      const expected = new RegExp(`^SEARCH smtp_log USING (COVERING )?INDEX ${index} \\(account_id=\\?`);
      for (const line of scans) t.match(line, expected);
      if (accounts.length > 1) t.ok(plan.includes('MERGE (UNION ALL)'), 'arms are merged, not sorted');
    }
  }
});

t.test('a rare subject substring is looked up in the trigram index; a common one scans in order', async (t) => {
  const { db, log, ids: [a, b] } = setup(t);
  const acct = a as number;
  const common = Array.from({ length: 5001 }, (_, i) =>
    row(acct, { subject: `Your receipt ${i}`, created_at: T0 + i }),
  );
  const rare = row(acct, { subject: 'Password RESET for Zoë', created_at: T0 + 10_000 });
  const otherTenant = row(b as number, { subject: 'password reset for bob', created_at: T0 + 20_000 });
  const old = row(acct, { subject: 'password reset (old)', created_at: T0 - 10_000 });
  log.insertRows([...common, rare, otherTenant, old]);
  const page = { startAt: 0, count: 20 };
  const recent: SmtpLogFilters = { since: T0, until: T0 + 86_400_000, subject: 'password reset' };

  t.match(log.explainSearch([acct], recent, page).join('\n'), /SCAN subject_candidates VIRTUAL TABLE/);
  t.same(ids(log.search([acct], recent, page)), [rare.delivery_id], 'case-insensitive, scoped by account and time');
  t.same(ids(log.search([acct, b as number], recent, page)), [otherTenant.delivery_id, rare.delivery_id]);
  t.same(ids(log.search([acct], { ...recent, subject: 'no such subject' }, page)), []);

  const receipts = { ...recent, subject: 'receipt' };
  const plan = log.explainSearch([acct], receipts, page).join('\n');
  t.notMatch(plan, /subject_candidates/, '5001 candidates: ordered scan instead');
  t.match(plan, /SEARCH smtp_log USING COVERING INDEX smtp_log_account_time/, "the subject is read from the index (migration 29)");
  t.same(ids(log.search([acct], receipts, page)), common.slice(-20).reverse().map((r) => r.delivery_id));

  // Retention deletes rows; the trigger keeps the trigram index in step with the table.
  db.prepare('DELETE FROM smtp_log WHERE delivery_id = ?').run(rare.delivery_id);
  t.same(ids(log.search([acct], recent, page)), []);
  const integrity = db.prepare("INSERT INTO smtp_log_subject (smtp_log_subject, rank) VALUES ('integrity-check', 1)");
  const check = () => integrity.run();
  t.doesNotThrow(check, 'trigram index matches the table');
});

t.test('a one-account subject search takes its page from the newest rows when they hold it, else looks further', async (t) => {
  const { log, ids: [a, b] } = setup(t);
  const acct = a as number;
  const n = SUBJECT_PROBE_ROWS + 1000;
  // Needles every 300 rows, so the newest SUBJECT_PROBE_ROWS rows hold some and older rows the rest; every other
  // needle has another sender, so the probe must apply the other filters too. Another tenant's needles are newest.
  const rows = Array.from({ length: n }, (_, i) =>
    row(acct, {
      subject: i % 300 === 7 ? `Your NEEDLE ${i}` : `Your receipt ${i}`,
      sender: i % 600 === 7 ? 'other@shop.example' : 'alerts@shop.example',
      created_at: T0 + i * 10,
    }),
  );
  const foreign = Array.from({ length: 5 }, (_, i) => row(b as number, { subject: `needle ${i}`, created_at: T0 + n * 10 + i }));
  log.insertRows([...rows, ...foreign]);
  const expected = (f: { sender?: string }, startAt: number, count: number) =>
    rows
      .filter((r) => /needle/i.test(r.subject ?? '') && (f.sender === undefined || r.sender === f.sender))
      .sort((x, y) => y.created_at - x.created_at || y.delivery_id - x.delivery_id)
      .slice(startAt, startAt + count)
      .map((r) => r.delivery_id);
  const inProbe = rows.slice(-SUBJECT_PROBE_ROWS).filter((r) => /needle/i.test(r.subject ?? '')).length;
  t.ok(inProbe > 2 && inProbe < rows.filter((r) => /needle/i.test(r.subject ?? '')).length, 'the case needs both paths');
  for (const [startAt, count] of [[0, 2], [0, inProbe], [0, 20], [inProbe - 1, 3], [1, 1]] as const) {
    for (const f of [{}, { sender: 'other@shop.example' }]) {
      const got = ids(log.search([acct], { ...ALL, ...f, subject: 'needle' }, { startAt, count }));
      t.same(got, expected(f, startAt, count), `start_at ${startAt}, count ${count}, ${f.sender ?? 'any sender'}`);
    }
  }
});

t.test('the second probe looks as far as the first one\'s density says a page needs, and no further than its bound', async (t) => {
  t.equal(secondProbeRows(0, 20), undefined, 'none found: the trigram index is asked');
  t.equal(secondProbeRows(4, 20), Math.ceil((SUBJECT_PROBE_ROWS * 20 * 2) / 4), 'twice the rows the density needs');
  t.equal(secondProbeRows(1, 20), SUBJECT_PROBE_ROWS * 40);
  t.ok(SUBJECT_PROBE_ROWS * 40 <= SUBJECT_PROBE_MAX_ROWS);
  t.equal(secondProbeRows(1, 10_000), undefined, 'a deep page at a low density: past the bound');
});
