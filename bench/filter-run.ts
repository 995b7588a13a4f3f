// Owns running corpus messages through the inbound pipeline for bench:filter and the rule fitter (bench/fit-rules.ts):
// a model trained as `sluice filter train` trains, each message judged as the MX judges it at the end of DATA.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { KEYS } from '../config/keys.js';
import { createBayesClassifier, learnItem, type BayesClassifier } from '../filters/bayes.js';
import { siteOf } from '../filters/bayes-tokens.js';
import { headerValues, splitMessage } from '../filters/message-headers.js';
import type { SpamStepVerdict, StepVerdict } from '../filters/inbound-verdicts.js';
import { createAutolearner } from '../mta/inbound/autolearn.js';
import { createInboundPipeline, type RelayMessage } from '../mta/inbound/pipeline.js';
import { contentOfBuffer } from '../mta/message-content.js';
import { createRspamdClient } from '../mta/scanners/rspamd-client.js';
import type { ServedDomainRow } from '../storage/ports/inbound-domains.js';
import { createAccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase } from '../storage/sqlite/database.js';
import { createSqliteBayesStore } from '../storage/sqlite/bayes.js';
import { arrivalTime, type CorpusGroup, type CorpusMessage } from './corpus.js';

/** Messages per learn commit while training (the CLI's `sluice filter train` batches the same way). */
export const BATCH = 500;
/** The default of every key the bench relies on, read from the key table (the bench runs the default configuration). */
export const defaultOf = (key: string) => KEYS.find((k) => k.key === key)!.default() as number;

/** A provisioned domain with the default settings (policy flag), as storage returns it. */
const DOMAIN = {
  id: 1, account_id: 1, domain: 'corp.example', subscription_handle: 'bench', via_alias: null, abuse_policy: 'flag',
  abuse_policy_override: 0, spam_header_name: null, spam_header_value: null, api_key_id: null,
} as unknown as ServedDomainRow;

/** Local DNS only (as the measurement): every name is unknown, so no network reputation for anyone. */
const noDns = async () => {
  throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
};

export interface Outcome {
  id: string;
  group: CorpusGroup;
  spam: boolean;
  ms: number;
  verdict: SpamStepVerdict;
  /** With BENCH_RSPAMD: the decision Sluice made before this work (f8d2f0b) from the same message. */
  legacy?: boolean;
}

/** BENCH_DUMP=dir: each judged message's id, group, score, rules and probability, one JSON file per run. */
export function dump(name: string, out: readonly Outcome[]): void {
  const rows = out.map((o) => ({ id: o.id, group: o.group, score: o.verdict.score, rules: o.verdict.rules, p: o.verdict.bayes && !o.verdict.bayes.abstained ? o.verdict.bayes.probability : null }));
  fs.writeFileSync(path.join(process.env.BENCH_DUMP!, name), JSON.stringify(rows));
}

/** Our own Received field, as the MX prepends it (RFC 5321 §4.4): the pipeline and rspamd see what the MX hands on. */
export const received = (id: string) =>
  Buffer.from(`Received: from client.example ([203.0.113.7]) by mx.sluice.bench with ESMTP id ${id.replace(/\W/g, '')}\r\n\tfor <user@corp.example>; Sun, 22 Nov 2026 12:00:00 +0000\r\n`);


function spamStep(verdicts: readonly StepVerdict[]): SpamStepVerdict {
  return verdicts.find((v): v is SpamStepVerdict => v.step === 'spam')!;
}

/** What the judged stream taught the model by itself (runFold's `learn`). */
export interface Learned {
  spam: number;
  ham: number;
  /** Certain verdicts not learned because the account's hourly bound was spent (a failed learn throws). */
  overBound: number;
}

const HOUR = 3_600_000;

/**
 * Runs one test fold through the pipeline (what the MX calls at the end of DATA). With `learn`, the stream learns as
 * it goes, as an install with `filters.bayes.autolearn` on (the default): in arrival order, each message through the
 * MX's own autolearn step (filters/autolearn.ts decides, mta/inbound/autolearn.ts learns into the account's model and
 * the global one under `filters.bayes.autolearn_per_hour`, both at their defaults), before the next is judged. No
 * label of the corpus is learned: only the pipeline's own certain verdicts. The learner's clock is the message's
 * arrival, shifted by whole hours to after the training run (so the hourly bound counts the corpus's own clock hours,
 * and what the stream learns is newer, for the model's forgetting, than what the operator trained).
 */
export async function runFold(
  test: readonly CorpusMessage[],
  bayes: BayesClassifier,
  opts: {
    rspamd?: { url: string; legacy: (raw: Buffer, m: CorpusMessage, v: SpamStepVerdict) => Promise<boolean> } | undefined;
    learn?: Learned | undefined;
  } = {},
): Promise<Outcome[]> {
  const { rspamd, learn } = opts;
  let last: RelayMessage | undefined;
  const stream = learn ? test.map((m) => ({ m, at: arrivalTime(m.raw) })).sort((a, b) => a.at - b.at) : test.map((m) => ({ m, at: NaN }));
  const shift = learn && stream.length > 0 ? Math.ceil((Date.now() - stream[0]!.at) / HOUR + 1) * HOUR : 0;
  let clock = 0;
  let failure: Error | undefined;
  const counting = {
    prepare: bayes.prepare,
    learn: async (...args: Parameters<BayesClassifier['learn']>) => {
      // The learner logs a failure and goes on, as the MX must; the bench must not: a figure learned from nothing.
      const outcomes = await bayes.learn(...args).catch((err: unknown) => {
        throw (failure = err as Error);
      });
      // Counted once per message: the account's model is learned first, then the global one.
      if (learn && args[0] !== null) for (const it of args[1]) learn[it.cls]++;
      return outcomes;
    },
  };
  const learner = learn && createAutolearner({ bayes: counting, perHour: defaultOf('filters.bayes.autolearn_per_hour'), now: () => clock, logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }) });
  const autolearn = learn && learner
    ? {
        learner: {
          async learn(accountId: number, cls: 'spam' | 'ham', sample: Buffer) {
            const before = learn.spam + learn.ham;
            await learner.learn(accountId, cls, sample);
            if (failure) throw new Error(`autolearn failed: ${failure.message}`);
            // The learner says nothing back (it never fails a message): nothing learned, no failure, is the bound spent.
            if (learn.spam + learn.ham === before) learn.overBound++;
          },
        },
        spamScore: defaultOf('filters.bayes.autolearn_spam_score'),
      }
    : undefined;
  const pipeline = createInboundPipeline({
    hostname: 'mx.sluice.bench',
    domains: { findServedDomain: async () => DOMAIN },
    lists: { matchLists: async () => ({ account: [], domain: [], recipient: [] }) },
    quarantine: { insert: async () => 0 },
    resolver: noDns,
    relay: async (m) => void (last = m),
    rspamd: rspamd ? createRspamdClient({ url: rspamd.url, timeoutMs: 30_000 }) : undefined,
    // rspamd's `greylist` action: counted as the sender's retry after the delay, which greylisting lets through and
    // rspamd's action then no longer holds (a spam bot that never retries would be caught: this counts recall low).
    greylist: { applies: () => false, check: async () => undefined, rspamdAsked: async () => undefined },
    scannerFailure: 'tempfail',
    spamThreshold: defaultOf('filters.spam_threshold'),
    quarantineDays: 30,
    now: Date.now,
    logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
    bayes,
    autolearn,
  });
  const out: Outcome[] = [];
  for (const { m, at } of stream) {
    clock = at + shift;
    last = undefined;
    const t0 = performance.now();
    const raw = Buffer.concat([received(m.id), m.raw]);
    const reply = await pipeline.handle({ mailFrom: m.mailFrom, rcptTo: ['user@corp.example'], clientIp: '203.0.113.7', helo: 'client.example', tls: false, content: contentOfBuffer(raw) });
    const ms = performance.now() - t0;
    if (!last) throw new Error(`${m.id}: not relayed (${reply.code} ${reply.status} ${reply.message})`);
    const v = spamStep((last as RelayMessage).verdicts);
    out.push({ id: m.id, group: m.group, spam: v.verdict === 'spam', ms, verdict: v, ...(rspamd ? { legacy: await rspamd.legacy(raw, m, v) } : {}) });
  }
  return out;
}

export const pct = (n: number, d: number) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(1)} %`);

export function figures(label: string, outcomes: readonly Outcome[], isSpam: (o: Outcome) => boolean): string {
  const of = (g: CorpusGroup) => outcomes.filter((o) => o.group === g);
  const hit = (g: CorpusGroup) => of(g).filter(isSpam).length;
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  const p = (q: number) => (ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0).toFixed(1);
  return (
    `| ${label} | ${pct(hit('spam'), of('spam').length)} (${hit('spam')}/${of('spam').length}) | ` +
    `${pct(hit('easy-ham'), of('easy-ham').length)} (${hit('easy-ham')}/${of('easy-ham').length}) | ` +
    `${pct(hit('hard-ham'), of('hard-ham').length)} (${hit('hard-ham')}/${of('hard-ham').length}) | ${p(0.5)} / ${p(0.99)} |`
  );
}

/** A fresh model (its own SQLite file) trained on `spam` and `ham` in batches, as `sluice filter train` does. */
export async function trained<T>(spam: readonly CorpusMessage[], ham: readonly CorpusMessage[], use: (bayes: BayesClassifier) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-filter-'));
  const db = openDatabase(dir);
  try {
    // The account the bench's domain belongs to: its model is where the MX's autolearn step learns (runFold's `learn`).
    const account = createAccountStore(db).createAccount({ handle: 'bench', companyName: null, parentId: null, now: Date.now() });
    if (!account.ok || account.value.id !== DOMAIN.account_id) throw new Error('the bench account is not account 1');
    const bayes = createBayesClassifier({ store: createSqliteBayesStore(db), minLearned: defaultOf('filters.bayes.min_learned'), maxTokens: defaultOf('filters.bayes.max_tokens') });
    // In arrival order, as a live install learns: the model's bound (filters.bayes.max_tokens) forgets the least
    // recently learned tokens, so all spam first and then all ham would leave it forgetting spam.
    const all = [...spam.map((m) => ({ raw: m.raw, cls: 'spam' as const })), ...ham.map((m) => ({ raw: m.raw, cls: 'ham' as const }))]
      .map((x) => ({ x, at: arrivalTime(x.raw) }))
      .sort((a, b) => a.at - b.at)
      .map((a) => a.x);
    for (let i = 0; i < all.length; i += BATCH) await bayes.learn(null, all.slice(i, i + BATCH).map((x) => learnItem(x.raw, x.cls)), Date.now());
    return await use(bayes);
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The newest `n` ham of the training part, taken from easy and hard ham in their shares of it (oldest first). The
 * corpus's hard ham ends two months before its easy ham, so the newest 1,000 of both together held no hard ham at all:
 * an install's first weeks hold its kinds of mail together, as the judged part does (1,000 easy to 100 hard).
 */
export function newestInShares(ham: readonly CorpusMessage[], n: number): CorpusMessage[] {
  if (n >= ham.length) return [...ham];
  const groups = [...new Set(ham.map((m) => m.group))];
  const picked = new Set(groups.flatMap((g) => {
    const of = ham.filter((m) => m.group === g);
    return of.slice(-Math.round((n * of.length) / ham.length));
  }));
  return ham.filter((m) => picked.has(m));
}

/** The site (siteOf) of a message's From address, lower case; '' without one. */
export function senderSite(raw: Buffer): string {
  const from = headerValues(splitMessage(raw).headers, 'from')[0] ?? '';
  const host = /[^\s<>"@]+@([^\s<>"]+?)>?\s*$/.exec(from)?.[1] ?? /@([^\s<>"]+)/.exec(from)?.[1];
  return host ? siteOf(host) : '';
}

/**
 * `k` folds in which no sender site has mail of one class in two folds: what a model is judged on comes from senders
 * it never learned, as later mail brings new ones. The near-duplicate folds (corpus.ts groupedFolds) leave one
 * newsletter's issues on both sides, and judged a classifier change far kinder to hard ham than the time-ordered
 * evaluation then was (issue 34). Each class's sites are dealt, largest first, to the fold with the fewest messages of
 * that class (ties to the first), so the same corpus always makes the same folds.
 */
export function senderFolds<T extends { raw: Buffer; group: string }>(messages: readonly T[], k: number): T[][] {
  const bySite = new Map<string, T[]>();
  for (const m of messages) {
    const key = `${m.group} ${senderSite(m.raw)}`;
    bySite.set(key, [...(bySite.get(key) ?? []), m]);
  }
  const folds: T[][] = Array.from({ length: k }, () => []);
  const count = (f: readonly T[], cls: string) => f.reduce((n, m) => n + (m.group === cls ? 1 : 0), 0);
  for (const g of [...bySite.values()].sort((a, b) => b.length - a.length)) {
    folds.reduce((a, b) => (count(b, g[0]!.group) < count(a, g[0]!.group) ? b : a)).push(...g);
  }
  return folds;
}
