// Owns the outbound log search benchmark: BENCH_ROWS (1,000,000) synthetic smtp_log rows, p50/p95 per query shape.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../storage/sqlite/database.js';
import { createSmtpLogStore } from '../storage/sqlite/smtp-log.js';
import { type NewSmtpLogRow, type SmtpLogFilters, type SmtpLogPage, type SmtpLogRow } from '../storage/ports/smtp-log.js';
import { SMTP_LOG_COLUMNS } from '../storage/smtp-log-filters.js';
import { percentile, SEARCH_BENCH, prng, weightedSampler, zipfSampler } from './sampling.js';

const { DAY, ROWS, RUNS, WARMUP, TARGET_P95_MS, BATCH, NOW } = SEARCH_BENCH;

const rand = prng(20261122);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(list: readonly T[]): T => list[int(list.length)] as T;

/** Zipf-like and weighted samplers over this bench's seeded PRNG (bench/sampling.ts). */
const zipf = (n: number, s: number) => zipfSampler(rand, n, s);
const weighted = <T>(entries: readonly (readonly [T, number])[]) => weightedSampler(rand, entries);

// 10 accounts: two parents with sub-accounts and five stand-alone parents; traffic is skewed towards a few.
const ACCOUNTS: { handle: string; parent?: string; share: number }[] = [
  { handle: 'acme', share: 30 },
  { handle: 'acmeshop', parent: 'acme', share: 15 },
  { handle: 'acmeblog', parent: 'acme', share: 5 },
  { handle: 'acmecrm', parent: 'acme', share: 10 },
  { handle: 'globex', share: 12 },
  { handle: 'globexeu', parent: 'globex', share: 8 },
  { handle: 'initech', share: 7 },
  { handle: 'umbrella', share: 6 },
  { handle: 'hooli', share: 4 },
  { handle: 'vandelay', share: 3 },
];

const WORDS = (
  'order invoice receipt shipped delivered password reset welcome account verify email weekly digest report ' +
  'alert reminder meeting booking confirmed cancelled payment failed refund subscription renewal trial ' +
  'update security login code newsletter offer summary statement ticket reply comment mention invitation'
).split(' ');
const TLDS = ['com', 'net', 'org', 'io', 'de', 'fr', 'co.uk', 'example'];

interface Profile {
  id: number;
  handle: string;
  senders: string[];
  senderRank: () => number;
  subjects: string[];
  subjectRank: () => number;
  ips: string[];
  hosts: string[];
  ipRank: () => number;
  senderIds: string[];
  senderIdRank: () => number;
}

function makeProfile(id: number, handle: string): Profile {
  const domains = Array.from({ length: 3 }, (_, i) => `${handle}${i === 0 ? '' : i}.${pick(TLDS)}`);
  const locals = ['noreply', 'no-reply', 'alerts', 'billing', 'support', 'news', 'hello', 'team', 'accounts'];
  const senders = Array.from({ length: 60 }, (_, i) =>
    i < locals.length ? `${locals[i]}@${domains[0]}` : `user${i}@${pick(domains)}`,
  );
  const subjects = Array.from(
    { length: 400 },
    (_, i) => `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)} ${i % 7 === 0 ? 'for your account' : pick(WORDS)}`,
  );
  const ips = Array.from({ length: 24 }, (_, i) => `10.${id}.${i >> 4}.${(i * 17) % 250}`);
  const hosts = ips.map((_, i) => `app${i}.${domains[0]}`);
  const senderIds = Array.from({ length: 800 }, (_, i) => `${handle}|user-${i}`);
  return {
    id,
    handle,
    senders,
    senderRank: zipf(senders.length, 1.1),
    subjects,
    subjectRank: zipf(subjects.length, 1.0),
    ips,
    hosts,
    ipRank: zipf(ips.length, 1.2),
    senderIds,
    senderIdRank: zipf(senderIds.length, 1.0),
  };
}

/** A sample of values actually present for an account, to query with (so searches find something). */
interface Samples {
  rows: NewSmtpLogRow[];
  seen: number;
}

/**
 * Fills `ROWS` rows in time order (delivery ids ascending, as the queue would) in big transactions. With `writer`
 * undefined it only replays the generator (same seed, same rows) to rebuild the samples of a kept database.
 */
function fill(writer: Writer | undefined, profiles: Profile[]): Map<number, Samples> {
  const accountOf = weighted(profiles.map((p, i) => [p, ACCOUNTS[i]!.share] as const));
  const rcptPool = 300_000;
  const rcptRank = zipf(rcptPool, 0.9);
  const rcptName = (r: number) => `${r % 3 === 0 ? 'John.Doe' : 'user'}${r}@mail${r % 997}.${TLDS[r % TLDS.length]}`;
  const recipients = weighted([
    [1, 80],
    [2, 12],
    [3, 5],
    [5, 3],
  ] as const);
  const outcome = weighted([
    ['delivered', 92],
    ['bounced', 5],
    ['deferred', 3],
  ] as const);
  const spam = weighted([
    ['UNKNOWN', 60],
    ['BULK', 39],
    ['CONFIRMED', 1],
  ] as const);
  const virus = weighted([
    ['UNKNOWN', 60],
    ['MEDIUM', 39.99],
    ['CONFIRMED', 0.01],
  ] as const);
  const samples = new Map<number, Samples>(profiles.map((p) => [p.id, { rows: [], seen: 0 }]));
  const start = NOW - 30 * DAY;
  const step = (30 * DAY) / ROWS;
  let deliveryId = 0;
  let message = 0;
  let batch: NewSmtpLogRow[] = [];
  while (deliveryId < ROWS) {
    const p = accountOf();
    const createdAt = Math.floor(start + deliveryId * step);
    message++;
    const messageId = `${message.toString(36)}.${int(1e9).toString(36)}@${p.handle}.sluice.test`;
    const sendRequestId = `req-${message}-${int(1e6)}`;
    const sender = p.senders[p.senderRank()] as string;
    const subject = `${p.subjects[p.subjectRank()]} #${100000 + int(900000)}`;
    const ipIndex = p.ipRank();
    const viaSmtp = ipIndex % 2 === 0;
    const size = Math.round(Math.exp(8 + rand() * 4));
    const n = recipients();
    for (let r = 0; r < n && deliveryId < ROWS; r++) {
      deliveryId++;
      const row: NewSmtpLogRow = {
        delivery_id: deliveryId,
        account_id: p.id,
        message_id: messageId,
        request_id: sendRequestId,
        sender,
        rcpt: rcptName(rcptRank()),
        auth: viaSmtp ? p.handle : `api-key-${(ipIndex % 5) + 1}`,
        upstream: p.ips[ipIndex] as string,
        upstream_hostname: p.hosts[ipIndex] as string,
        sender_id: p.senderIds[p.senderIdRank()] as string,
        subject,
        size,
        spam_disposition: spam(),
        virus_disposition: virus(),
        created_at: createdAt,
      };
      batch.push(row);
      // Reservoir sampling: a uniform sample of the account's rows over all 30 days.
      const s = samples.get(p.id) as Samples;
      s.seen++;
      if (s.rows.length < 2000) s.rows.push(row);
      else if (int(s.seen) < 2000) s.rows[int(2000)] = row;
    }
    if (batch.length >= BATCH) {
      write(writer, batch, outcome);
      batch = [];
    }
  }
  if (batch.length > 0) write(writer, batch, outcome);
  return samples;
}

/** The attempt columns of a row: its last attempt, as updateAttempt leaves them. */
type Attempt = Pick<SmtpLogRow, 'lastcmd' | 'rspcode' | 'rspmsg' | 'delivered' | 'updated_at'>;
/** Writes a batch of rows with their attempts in one transaction. */
type Writer = (rows: NewSmtpLogRow[], attempts: Attempt[]) => void;

/** Writes a batch and its outcomes; without a writer, draws the same random numbers and writes nothing. */
function write(writer: Writer | undefined, batch: NewSmtpLogRow[], outcome: () => string): void {
  const attempts = outcomes(batch, outcome);
  writer?.(batch, attempts);
}

/** The latest attempt of each row. */
function outcomes(rows: NewSmtpLogRow[], outcome: () => string): Attempt[] {
  const codes: Record<string, [number, string, string][]> = {
    delivered: [[250, 'DATA', '250 2.0.0 OK queued']],
    bounced: [
      [550, 'RCPT TO', '550 5.1.1 user unknown'],
      [554, 'DATA', '554 5.7.1 message rejected as spam'],
      [552, 'DATA', '552 5.2.2 mailbox full'],
    ],
    deferred: [
      [421, 'CONNECT', '421 4.7.0 try again later'],
      [451, 'RCPT TO', '451 4.7.1 greylisted'],
    ],
  };
  return rows.map((row) => {
    const kind = outcome();
    const [rspcode, lastcmd, rspmsg] = pick(codes[kind] as [number, string, string][]);
    return { lastcmd, rspcode, rspmsg, delivered: kind === 'delivered', updated_at: row.created_at + 2000 };
  });
}

/**
 * Inserts each row in its final state (what insertRow then updateAttempt leave) in one transaction per batch: the
 * bench measures searches, and one statement per row instead of two halves the fill.
 */
function bulkWriter(db: Db): Writer {
  const insert = db.prepare(
    `INSERT INTO smtp_log (${SMTP_LOG_COLUMNS}) VALUES (${SMTP_LOG_COLUMNS.split(', ').map((c) => `@${c}`).join(', ')})`,
  );
  return db.transaction((rows: NewSmtpLogRow[], attempts: Attempt[]) => {
    rows.forEach((r, i) => {
      const a = attempts[i] as Attempt;
      insert.run({ ...r, ...a, delivered: a.delivered ? 1 : 0 });
    });
  });
}

/**
 * Drops smtp_log's indexes and triggers for the fill and returns what recreates them: sorted index builds and one
 * trigram rebuild take minutes where 10 M random inserts into 13 indexes take an hour. Read from sqlite_master, so
 * the indexes of every migration (and of a new one) come back exactly as the migrations made them.
 */
function dropIndexes(db: Db): () => void {
  const defs = db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'smtp_log' AND type IN ('index', 'trigger') AND sql IS NOT NULL")
    .all() as { type: string; name: string; sql: string }[];
  for (const d of defs) db.exec(`DROP ${d.type === 'index' ? 'INDEX' : 'TRIGGER'} ${d.name}`);
  return () =>
    db.transaction(() => {
      for (const d of defs) db.exec(d.sql);
      db.exec("INSERT INTO smtp_log_subject (smtp_log_subject) VALUES ('rebuild')");
    })();
}

interface Shape {
  name: string;
  accounts: number[];
  filters: (i: number) => Omit<SmtpLogFilters, 'since' | 'until'>;
  window: 'default' | '30d' | '7d';
  page?: SmtpLogPage;
}

function flipCase(s: string): string {
  return s.replace(/[a-z]/gi, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));
}

/**
 * BENCH_KEEP=<directory>: the database is generated there once and reused by later runs with the same BENCH_ROWS
 * (migrations added since apply on open, as on a server's upgrade); the samples are rebuilt by replaying the seeded
 * generator. BENCH_KEEP=1 keeps the temporary directory instead. Without it the directory is deleted at the end.
 * BENCH_SHAPES=<text> times only the shapes whose name holds it; BENCH_SLOWEST=<n> prints each shape's n slowest
 * searches with their filters (which substring, which window), to find what a p95 is made of.
 */
const KEEP = process.env.BENCH_KEEP;
/** Written after a complete fill: the row count the kept database holds. */
const ROWS_MARKER = 'bench-rows';
/** Page cache while filling (KiB, as PRAGMA cache_size takes it negative): 13 indexes take random inserts. */
const FILL_CACHE_KIB = 512 * 1024;

function benchDir(): { dir: string; reuse: boolean; remove: boolean } {
  if (KEEP === undefined || KEEP === '' || KEEP === '1') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-search-'));
    return { dir, reuse: false, remove: KEEP !== '1' };
  }
  const dir = path.resolve(KEEP);
  const marker = path.join(dir, ROWS_MARKER);
  if (fs.existsSync(marker)) {
    const kept = Number(fs.readFileSync(marker, 'utf8'));
    if (kept !== ROWS) throw new Error(`BENCH_KEEP ${dir} holds ${kept} rows, not BENCH_ROWS=${ROWS}: delete it or pick another`);
    return { dir, reuse: true, remove: false };
  }
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    throw new Error(`BENCH_KEEP ${dir} is not empty and holds no complete bench database: delete it or pick another`);
  }
  return { dir, reuse: false, remove: false };
}

function main(): void {
  const started = Date.now();
  const { dir, reuse, remove } = benchDir();
  try {
    const db = openDatabase(dir);
    const accounts = createAccountStore(db);
    const ids = new Map<string, number>();
    const byHandle = db.prepare('SELECT id FROM accounts WHERE handle = ?').pluck();
    for (const a of ACCOUNTS) {
      if (reuse) {
        ids.set(a.handle, byHandle.get(a.handle) as number);
        continue;
      }
      const res = accounts.createAccount({
        handle: a.handle,
        companyName: null,
        parentId: a.parent ? (ids.get(a.parent) as number) : null,
        now: NOW - 40 * DAY,
      });
      if (!res.ok) throw new Error(`account ${a.handle}: ${res.reason}`);
      ids.set(a.handle, res.value.id);
    }
    const profiles = ACCOUNTS.map((a) => makeProfile(ids.get(a.handle) as number, a.handle));
    const store = createSmtpLogStore(db);
    const fillStart = Date.now();
    let samples: Map<number, Samples>;
    if (reuse) {
      samples = fill(undefined, profiles);
      console.log(`reusing ${dir} (${ROWS.toLocaleString('en')} rows); samples replayed in ${((Date.now() - fillStart) / 1000).toFixed(1)} s`);
    } else {
      // A big page cache for the fill alone; the searches below run with the default one, as a server does.
      const defaultCache = db.pragma('cache_size', { simple: true }) as number;
      db.pragma(`cache_size = -${FILL_CACHE_KIB}`);
      const restore = dropIndexes(db);
      samples = fill(bulkWriter(db), profiles);
      const indexStart = Date.now();
      restore();
      const indexMs = Date.now() - indexStart;
      db.pragma(`cache_size = ${defaultCache}`);
      db.pragma('wal_checkpoint(TRUNCATE)');
      fs.writeFileSync(path.join(dir, ROWS_MARKER), String(ROWS));
      const fillMs = Date.now() - fillStart;
      const bytes = fs.statSync(path.join(dir, 'sluice.db')).size + walSize(dir);
      console.log(
        `filled ${ROWS.toLocaleString('en')} rows across ${ACCOUNTS.length} accounts ` +
          `in ${(fillMs / 1000).toFixed(1)} s ` +
          `(${Math.round(ROWS / (fillMs / 1000)).toLocaleString('en')} rows/s, of which ${(indexMs / 1000).toFixed(1)} s ` +
          `building the indexes); load average ${os.loadavg()[0]?.toFixed(2)}; ` +
          `database ${(bytes / 1e6).toFixed(0)} MB`,
      );
    }

    const acme = ids.get('acme') as number;
    const acmeFamily = ['acme', 'acmeshop', 'acmeblog', 'acmecrm'].map((h) => ids.get(h) as number);
    const sub = ids.get('acmeshop') as number;
    const rowsOf = (id: number) => (samples.get(id) as Samples).rows;
    const sample = (id: number, i: number) => rowsOf(id)[(i * 7919) % rowsOf(id).length] as NewSmtpLogRow;
    const words = (s: string | null | undefined) => (s ?? '').split(' ');

    const shapes: Shape[] = [
      { name: 'default 3-day window, no filter', accounts: [acme], window: 'default', filters: () => ({}) },
      { name: 'default window, parent + 3 subs', accounts: acmeFamily, window: 'default', filters: () => ({}) },
      {
        name: 'default window, start_at 9900',
        accounts: [acme],
        window: 'default',
        filters: () => ({}),
        page: { startAt: 9900, count: 99 },
      },
      {
        name: '30 days, parent + subs, start_at 9900',
        accounts: acmeFamily,
        window: '30d',
        filters: () => ({}),
        page: { startAt: 9900, count: 99 },
      },
      {
        name: 'message_id, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ messageId: sample(acme, i).message_id }),
      },
      {
        name: 'message_id, parent + subs',
        accounts: acmeFamily,
        window: '30d',
        filters: (i) => ({ messageId: sample(sub, i).message_id }),
      },
      {
        name: 'request_id, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ sendRequestId: sample(acme, i).request_id }),
      },
      {
        name: 'sender (case flipped), 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ sender: flipCase(sample(acme, i).sender) }),
      },
      {
        name: 'rcpt (case flipped), 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ rcpt: flipCase(sample(acme, i).rcpt) }),
      },
      {
        name: 'rcpt, parent + subs, 30 days',
        accounts: acmeFamily,
        window: '30d',
        filters: (i) => ({ rcpt: sample(sub, i).rcpt }),
      },
      {
        name: 'auth, default window',
        accounts: [acme],
        window: 'default',
        filters: (i) => ({ auth: sample(acme, i).auth as string }),
      },
      {
        name: 'upstream, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ upstream: sample(acme, i).upstream as string }),
      },
      {
        name: 'upstream_hostname, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ upstreamHostname: sample(acme, i).upstream_hostname as string }),
      },
      {
        name: 'sender_id, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ senderId: sample(acme, i).sender_id as string }),
      },
      {
        name: 'subject substring, default window',
        accounts: [acme],
        window: 'default',
        filters: (i) => ({ subject: flipCase(words(sample(acme, i).subject).slice(1, 3).join(' ')) }),
      },
      {
        name: 'subject substring, 30 days',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ subject: words(sample(acme, i).subject).slice(0, 2).join(' ') }),
      },
      {
        name: 'subject, exact ticket number, 7 days',
        accounts: [acme],
        window: '7d',
        filters: (i) => ({ subject: words(sample(acme, i).subject).slice(-1)[0] as string }),
      },
      { name: 'delivered=N, 30 days', accounts: [acme], window: '30d', filters: () => ({ delivered: false }) },
      { name: 'delivered=Y, 30 days', accounts: [acme], window: '30d', filters: () => ({ delivered: true }) },
      { name: 'rspcode=550, 30 days', accounts: [acme], window: '30d', filters: () => ({ rspcode: 550 }) },
      {
        name: 'spam_disposition=CONFIRMED, 30 days',
        accounts: [acme],
        window: '30d',
        filters: () => ({ spamDisposition: 'CONFIRMED' }),
      },
      {
        name: 'virus_disposition=CONFIRMED, 30 days',
        accounts: [acme],
        window: '30d',
        filters: () => ({ virusDisposition: 'CONFIRMED' }),
      },
      {
        name: 'sender + delivered=N + rspcode=550, 30 d',
        accounts: [acme],
        window: '30d',
        filters: (i) => ({ sender: sample(acme, i).sender, delivered: false, rspcode: 550 }),
      },
      {
        name: 'rcpt + delivered=Y, 7 days',
        accounts: [acme],
        window: '7d',
        filters: (i) => ({ rcpt: sample(acme, i).rcpt, delivered: true }),
      },
      {
        name: 'sender + subject, default window',
        accounts: [acme],
        window: 'default',
        filters: (i) => ({ sender: sample(acme, i).sender, subject: words(sample(acme, i).subject)[0] as string }),
      },
      {
        name: 'sender, parent + subs, start_at 9900',
        accounts: acmeFamily,
        window: '30d',
        filters: (i) => ({ sender: sample(acme, i).sender }),
        page: { startAt: 9900, count: 99 },
      },
      {
        name: 'delivered=N, parent + subs, start_at 9900',
        accounts: acmeFamily,
        window: '30d',
        filters: () => ({ delivered: false }),
        page: { startAt: 9900, count: 99 },
      },
      {
        name: 'no match: unknown rcpt, 30 days',
        accounts: acmeFamily,
        window: '30d',
        filters: (i) => ({ rcpt: `nobody${i}@nowhere.example` }),
      },
      {
        name: 'no match: subject, default window',
        accounts: [acme],
        window: 'default',
        filters: (i) => ({ subject: `zz-no-such-subject-${i}` }),
      },
      {
        name: 'no match: subject, parent + subs, 30 days',
        accounts: acmeFamily,
        window: '30d',
        filters: (i) => ({ subject: `zz-no-such-subject-${i}` }),
      },
    ];

    const windows = {
      default: { since: NOW - 3 * DAY, until: NOW + 1 },
      '30d': { since: NOW - 30 * DAY, until: NOW + DAY },
      '7d': { since: NOW - 7 * DAY, until: NOW + DAY },
    };
    const header = `| shape | accounts | window | p50 ms | p95 ms | rows/page | ok |`;
    const lines = [header, '|---|---|---|---:|---:|---:|---|'];
    let misses = 0;
    const plans: string[] = [];
    const only = process.env.BENCH_SHAPES;
    for (const shape of shapes) {
      if (only && !shape.name.includes(only)) continue;
      const page = shape.page ?? { startAt: 0, count: 20 };
      const times: number[] = [];
      const slow: { ms: number; filters: SmtpLogFilters }[] = [];
      let rows = 0;
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const filters: SmtpLogFilters = { ...shape.filters(i), ...windows[shape.window] };
        const t0 = process.hrtime.bigint();
        const result = store.search(shape.accounts, filters, page);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (i >= WARMUP) {
          times.push(ms);
          slow.push({ ms, filters });
          rows += result.length;
        }
      }
      times.sort((a, b) => a - b);
      if (process.env.BENCH_SLOWEST) {
        slow.sort((a, b) => b.ms - a.ms);
        for (const s of slow.slice(0, Number(process.env.BENCH_SLOWEST))) console.log(`${shape.name}: ${s.ms.toFixed(1)} ms ${JSON.stringify(s.filters)}`);
      }
      const p50 = percentile(times, 50);
      const p95 = percentile(times, 95);
      const ok = p95 <= TARGET_P95_MS;
      if (!ok) misses++;
      lines.push(
        `| ${shape.name} | ${shape.accounts.length} | ${shape.window} | ${p50.toFixed(2)} | ${p95.toFixed(2)} | ` +
          `${(rows / RUNS).toFixed(1)} | ${ok ? 'yes' : 'NO'} |`,
      );
      if (process.env.BENCH_PLANS) {
        const filters: SmtpLogFilters = { ...shape.filters(0), ...windows[shape.window] };
        plans.push(`${shape.name}:\n  ${store.explainSearch(shape.accounts.slice(0, 2), filters, page).join('\n  ')}`);
      }
    }
    console.log(`\n${RUNS} timed runs per shape after ${WARMUP} warm-up runs; target p95 <= ${TARGET_P95_MS} ms\n`);
    console.log(lines.join('\n'));
    if (plans.length > 0) console.log(`\n${plans.join('\n')}`);
    console.log(`\n${misses === 0 ? 'all shapes meet the target' : `${misses} shape(s) miss the target`}; ` +
      `total ${((Date.now() - started) / 1000).toFixed(1)} s`);
    db.close();
    if (misses > 0) process.exitCode = 1;
  } finally {
    if (remove) fs.rmSync(dir, { recursive: true, force: true });
    else console.log(`kept ${dir}`);
  }
}

function walSize(dir: string): number {
  try {
    return fs.statSync(path.join(dir, 'sluice.db-wal')).size;
  } catch {
    return 0;
  }
}

main();
