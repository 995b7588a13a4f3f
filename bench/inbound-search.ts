// Owns the inbound log search benchmark: BENCH_ROWS (1,000,000) synthetic inbound_log rows, p50/p95 per search shape
// (a tenant's, a domain admin's, the operator's), against the target of issue 37: p95 <= 50 ms per shape.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { INBOUND_LOG_COLUMNS } from '../storage/inbound-log-filters.js';
import type { InboundLogFilters, InboundLogScope, InboundVerdict, NewInboundLogRow } from '../storage/ports/inbound-log.js';
import { createAccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../storage/sqlite/database.js';
import { createInboundLogRepo } from '../storage/sqlite/inbound-log.js';
import { percentile, SEARCH_BENCH, seeded, weightedSampler, zipfSampler } from './sampling.js';

const { DAY, ROWS, RUNS, WARMUP, TARGET_P95_MS, BATCH, NOW } = SEARCH_BENCH;

const { rand, int, pick } = seeded(20261123);

/** Ten customers of the MX, traffic skewed towards a few; each with three domains (one takes most mail). */
const ACCOUNTS = [['acme', 30], ['globex', 18], ['initech', 12], ['umbrella', 10], ['hooli', 8], ['vandelay', 7], ['stark', 6], ['wayne', 4], ['tyrell', 3], ['cyberdyne', 2]] as const;
const WORDS = (
  'invoice order shipped password reset welcome account verify weekly digest report alert reminder meeting booking ' +
  'confirmed payment failed refund subscription renewal update security login offer summary statement ticket winner ' +
  'prize urgent bitcoin loan pharmacy discount newsletter'
).split(' ');

/** Verdicts and reasons as the MX writes them, weighted: at DATA (a message) and at RCPT (never taken in). */
const AT_DATA = weightedSampler<[InboundVerdict, string]>(rand, [
  [['relayed', 'not-spam'], 70], [['relayed', 'safelisted'], 4], [['flagged', 'abuse-policy-flag'], 6],
  [['quarantined', 'abuse-policy-quarantine'], 6.9], [['quarantined', 'virus-quarantine'], 0.1], [['refused', 'abuse-policy-block'], 5],
  [['refused', 'blocklisted'], 2], [['deferred', 'filter-error:rspamd'], 1], [['deferred', 'rspamd-greylist'], 5],
]);
const AT_RCPT = weightedSampler<[InboundVerdict, string]>(rand, [[['refused', 'list-refused'], 25], [['refused', 'dnsbl-refused'], 35], [['deferred', 'greylisted'], 40]]);

interface Profile {
  id: number;
  domains: string[];
  domain: () => number;
  rcpt: () => number;
}

/** A reservoir of rows of each account over the whole 30 days, to query with (so searches find something). */
type Samples = Map<number | null, { rows: NewInboundLogRow[]; seen: number }>;

/** Generates ROWS rows in time order and hands them to `write` in batches; returns the samples. */
function fill(profiles: Profile[], write: (rows: NewInboundLogRow[]) => void): Samples {
  const accountOf = weightedSampler(rand, profiles.map((p, i) => [p, ACCOUNTS[i]![1]] as const));
  const sender = zipfSampler(rand, 100_000, 1.0);
  const client = zipfSampler(rand, 60_000, 1.1);
  const subject = zipfSampler(rand, 5_000, 1.0);
  const subjects = Array.from({ length: 5_000 }, () => `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)}`);
  const recipients = weightedSampler(rand, [[1, 80], [2, 14], [3, 6]] as const);
  const samples: Samples = new Map([...profiles.map((p) => p.id), null].map((id) => [id, { rows: [], seen: 0 }]));
  const step = (30 * DAY) / ROWS;
  let batch: NewInboundLogRow[] = [];
  let message = 0;
  for (let n = 0; n < ROWS; ) {
    message++;
    // 3 % of RCPTs name no served domain (relay denied): rows of no account, the operator's alone.
    const denied = rand() < 0.03;
    const p = accountOf();
    const atRcpt = denied || rand() < 0.25;
    const s = sender();
    const c = client();
    const base = {
      stage: atRcpt ? ('rcpt' as const) : ('data' as const),
      queue_id: atRcpt ? null : message.toString(16).toUpperCase().padStart(12, '0'),
      client_ip: `198.${51 + (c >> 16)}.${(c >> 8) & 255}.${c & 255}`,
      helo: `mail${c % 977}.sender${s % 5000}.example`,
      sender: `${s % 3 === 0 ? 'News' : 'user'}${s}@sender${s % 5000}.example`,
      subject: atRcpt ? null : `${subjects[subject()]} #${100000 + int(900000)}`,
      message_id: atRcpt ? null : `${message.toString(36)}.${int(1e9).toString(36)}@sender${s % 5000}.example`,
      size: atRcpt ? null : Math.round(Math.exp(8 + rand() * 4)),
    };
    const [verdict, reason] = denied ? (['refused', 'relay-denied'] as const) : atRcpt ? AT_RCPT() : AT_DATA();
    const score = atRcpt ? null : Math.round((verdict === 'relayed' ? rand() * 4 : 5 + rand() * 20) * 100) / 100;
    for (let r = recipients(); r > 0 && n < ROWS; r--, n++) {
      const domain = denied ? `elsewhere${int(1000)}.example` : p.domains[p.domain()]!;
      const row: NewInboundLogRow = {
        ...base, account_id: denied ? null : p.id, domain, rcpt: `${denied ? 'someone' : 'user'}${p.rcpt()}@${domain}`, verdict, reason, score,
        reply: atRcpt ? (verdict === 'deferred' ? '450 4.7.1 Greylisted' : '550 5.7.1 refused') : `250 2.0.0 Ok: queued as ${base.queue_id}`,
        steps: [{ step: 'lists', verdict: 'none', reason: 'no-list-match' }, { step: 'auth', verdict: 'pass', reason: 'spf-pass' },
          { step: 'spam', verdict: verdict === 'relayed' ? 'ham' : 'spam', score, rules: [{ name: 'MISSING_DATE', score: 1 }] },
          { step: 'policy', verdict, reason }],
        created_at: Math.floor(NOW - 30 * DAY + n * step),
      };
      batch.push(row);
      const kept = samples.get(row.account_id)!;
      kept.seen++;
      if (kept.rows.length < 2000) kept.rows.push(row);
      else if (int(kept.seen) < 2000) kept.rows[int(2000)] = row;
    }
    if (batch.length >= BATCH) {
      write(batch);
      batch = [];
    }
  }
  if (batch.length > 0) write(batch);
  return samples;
}

/** Inserts batches with inbound_log's indexes dropped, then builds them as the migrations made them (minutes, not an hour). */
function bulkFill(db: Db, profiles: Profile[]): Samples {
  const indexes = db.prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'inbound_log' AND type = 'index' AND sql IS NOT NULL").pluck().all() as string[];
  for (const sql of indexes) db.exec(`DROP INDEX ${/CREATE INDEX (\w+)/.exec(sql)![1]}`);
  const insert = db.prepare(`INSERT INTO inbound_log (${INBOUND_LOG_COLUMNS.join(', ')}) VALUES (${INBOUND_LOG_COLUMNS.map((c) => `@${c}`).join(', ')})`);
  const write = db.transaction((rows: NewInboundLogRow[]) => {
    for (const r of rows) insert.run({ ...r, steps: JSON.stringify(r.steps) });
  });
  const samples = fill(profiles, write);
  db.transaction(() => indexes.forEach((sql) => db.exec(sql)))();
  return samples;
}

interface Shape {
  name: string;
  scope: InboundLogScope;
  window: 3 | 7 | 30;
  filters: (i: number) => Omit<InboundLogFilters, 'since' | 'until'>;
  startAt?: number;
}

const flipCase = (s: string) => s.replace(/[a-z]/gi, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));

function main(): void {
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-inbound-'));
  try {
    const db = openDatabase(dir);
    const accounts = createAccountStore(db);
    const profiles: Profile[] = ACCOUNTS.map(([handle]) => {
      const res = accounts.createAccount({ handle, companyName: null, parentId: null, now: NOW - 40 * DAY });
      if (!res.ok) throw new Error(`account ${handle}`);
      return { id: res.value.id, domains: [`${handle}.example`, `${handle}-mail.example`, `lists.${handle}.test`], domain: zipfSampler(rand, 3, 2), rcpt: zipfSampler(rand, 3000, 0.9) };
    });
    const fillStart = Date.now();
    // A big page cache for the fill alone; the searches run with the connection's own, as a server's do.
    const defaultCache = db.pragma('cache_size', { simple: true }) as number;
    db.pragma('cache_size = -524288');
    const samples = bulkFill(db, profiles);
    db.pragma(`cache_size = ${defaultCache}`);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes = fs.statSync(path.join(dir, 'sluice.db')).size;
    console.log(`filled ${ROWS.toLocaleString('en')} rows in ${((Date.now() - fillStart) / 1000).toFixed(1)} s; database ${(bytes / 1e6).toFixed(0)} MB; load average ${os.loadavg()[0]?.toFixed(2)}`);

    const repo = createInboundLogRepo(db);
    const acme = profiles[0]!.id;
    // The API passes the key: the store looks up the account's domains bound to other keys (none here) every time.
    const tenant: InboundLogScope = { accountId: acme, keyId: 1 };
    const operator: InboundLogScope = { accountId: null };
    const sample = (id: number | null, i: number, atData = false) => {
      const rows = samples.get(id)!.rows.filter((r) => !atData || r.stage === 'data');
      return rows[(i * 7919) % rows.length]!;
    };
    const words = (s: string | null) => (s ?? '').split(' ');
    const shapes: Shape[] = [
      { name: 'default 3-day window, no filter', scope: tenant, window: 3, filters: () => ({}) },
      { name: '30 days, start_at 9900', scope: tenant, window: 30, filters: () => ({}), startAt: 9900 },
      { name: 'sender (case flipped), 30 days', scope: tenant, window: 30, filters: (i) => ({ sender: flipCase(sample(acme, i).sender) }) },
      { name: 'recipient, 30 days', scope: tenant, window: 30, filters: (i) => ({ rcpt: sample(acme, i).rcpt.toUpperCase() }) },
      { name: 'client address, 30 days', scope: tenant, window: 30, filters: (i) => ({ clientIp: sample(acme, i).client_ip }) },
      { name: 'message-id, 30 days', scope: tenant, window: 30, filters: (i) => ({ messageId: sample(acme, i, true).message_id! }) },
      { name: 'queue id, 30 days', scope: tenant, window: 30, filters: (i) => ({ queueId: sample(acme, i, true).queue_id! }) },
      { name: 'subject substring, 3 days', scope: tenant, window: 3, filters: (i) => ({ subject: flipCase(words(sample(acme, i, true).subject).slice(1, 3).join(' ')) }) },
      { name: 'subject substring, 30 days', scope: tenant, window: 30, filters: (i) => ({ subject: words(sample(acme, i, true).subject).slice(0, 2).join(' ') }) },
      { name: 'subject, exact ticket number, 7 days', scope: tenant, window: 7, filters: (i) => ({ subject: words(sample(acme, i, true).subject).at(-1)! }) },
      { name: 'verdict=quarantined, 30 days', scope: tenant, window: 30, filters: () => ({ verdict: 'quarantined' }) },
      { name: 'verdict=refused, 30 days, start_at 9900', scope: tenant, window: 30, filters: () => ({ verdict: 'refused' }), startAt: 9900 },
      { name: 'sender + verdict=refused, 30 days', scope: tenant, window: 30, filters: (i) => ({ sender: sample(acme, i).sender, verdict: 'refused' }) },
      { name: 'domain admin: its domain, 3 days', scope: tenant, window: 3, filters: () => ({ domain: 'lists.acme.test' }) },
      { name: 'domain admin: quarantined, 30 days', scope: tenant, window: 30, filters: () => ({ domain: 'lists.acme.test', verdict: 'quarantined' }) },
      { name: 'domain admin: subject, 7 days', scope: tenant, window: 7, filters: (i) => ({ domain: 'acme-mail.example', subject: words(sample(acme, i, true).subject)[0]! }) },
      { name: 'domain admin: no match, subject, 30 days', scope: tenant, window: 30, filters: (i) => ({ domain: 'acme.example', subject: `zz-no-such-subject-${i}` }) },
      { name: 'operator: no match, subject, 3 days', scope: operator, window: 3, filters: (i) => ({ subject: `zz-no-such-subject-${i}` }) },
      { name: 'operator, every account, 3 days', scope: operator, window: 3, filters: () => ({}) },
      { name: 'operator: sender, 30 days', scope: operator, window: 30, filters: (i) => ({ sender: sample(null, i).sender }) },
      { name: 'operator: client address, 30 days', scope: operator, window: 30, filters: (i) => ({ clientIp: sample(null, i).client_ip }) },
      { name: 'operator: verdict=deferred, 30 days', scope: operator, window: 30, filters: () => ({ verdict: 'deferred' }) },
      { name: 'no match: recipient, 30 days', scope: tenant, window: 30, filters: (i) => ({ rcpt: `nobody${i}@acme.example` }) },
      { name: 'no match: subject, 3 days', scope: tenant, window: 3, filters: (i) => ({ subject: `zz-no-such-subject-${i}` }) },
      { name: 'no match: subject, 30 days', scope: tenant, window: 30, filters: (i) => ({ subject: `zz-no-such-subject-${i}` }) },
    ];

    const lines = ['| shape | window | p50 ms | p95 ms | rows/page | ok |', '|---|---|---:|---:|---:|---|'];
    let misses = 0;
    for (const shape of shapes) {
      if (process.env.BENCH_SHAPES && !shape.name.includes(process.env.BENCH_SHAPES)) continue;
      const times: number[] = [];
      let rows = 0;
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const filters = { ...shape.filters(i), since: NOW - shape.window * DAY, until: NOW + 1 };
        const t0 = process.hrtime.bigint();
        const found = repo.search(shape.scope, filters, { startAt: shape.startAt ?? 0, count: shape.startAt ? 99 : 20 });
        if (i < WARMUP) continue;
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
        rows += found.length;
      }
      times.sort((a, b) => a - b);
      const p95 = percentile(times, 95);
      if (p95 > TARGET_P95_MS) misses++;
      lines.push(`| ${shape.name} | ${shape.window} d | ${percentile(times, 50).toFixed(2)} | ${p95.toFixed(2)} | ${(rows / RUNS).toFixed(1)} | ${p95 <= TARGET_P95_MS ? 'yes' : 'NO'} |`);
    }
    console.log(`\n${RUNS} timed runs per shape after ${WARMUP} warm-up runs; target p95 <= ${TARGET_P95_MS} ms\n\n${lines.join('\n')}`);
    console.log(`\n${misses === 0 ? 'all shapes meet the target' : `${misses} shape(s) miss the target`}; total ${((Date.now() - started) / 1000).toFixed(1)} s`);
    db.close();
    if (misses > 0) process.exitCode = 1;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
