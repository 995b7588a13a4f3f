// Owns running corpus messages through the inbound pipeline for bench:filter and the rule fitter (bench/fit-rules.ts):
// a model trained as `sluice filter train` trains, each message judged as the MX judges it at the end of DATA.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { KEYS } from '../config/keys.js';
import { createBayesClassifier, learnItem, type BayesClassifier } from '../filters/bayes.js';
import type { SpamStepVerdict, StepVerdict } from '../filters/inbound-verdicts.js';
import { createInboundPipeline, type RelayMessage } from '../mta/inbound/pipeline.js';
import { contentOfBuffer } from '../mta/message-content.js';
import { createRspamdClient } from '../mta/scanners/rspamd-client.js';
import type { ServedDomainRow } from '../storage/ports/inbound-domains.js';
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
  group: CorpusGroup;
  spam: boolean;
  ms: number;
  verdict: SpamStepVerdict;
  /** With BENCH_RSPAMD: the decision Sluice made before this work (f8d2f0b) from the same message. */
  legacy?: boolean;
}

/** Our own Received field, as the MX prepends it (RFC 5321 §4.4): the pipeline and rspamd see what the MX hands on. */
export const received = (id: string) =>
  Buffer.from(`Received: from client.example ([203.0.113.7]) by mx.sluice.bench with ESMTP id ${id.replace(/\W/g, '')}\r\n\tfor <user@corp.example>; Sun, 22 Nov 2026 12:00:00 +0000\r\n`);


function spamStep(verdicts: readonly StepVerdict[]): SpamStepVerdict {
  return verdicts.find((v): v is SpamStepVerdict => v.step === 'spam')!;
}

/** Runs one test fold through the pipeline (what the MX calls at the end of DATA). */
export async function runFold(
  test: readonly CorpusMessage[],
  bayes: BayesClassifier,
  rspamd?: { url: string; legacy: (raw: Buffer, m: CorpusMessage, v: SpamStepVerdict) => Promise<boolean> },
): Promise<Outcome[]> {
  let last: RelayMessage | undefined;
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
    out.push({ group: m.group, spam: v.verdict === 'spam', ms, verdict: v, ...(rspamd ? { legacy: await rspamd.legacy(raw, m, v) } : {}) });
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
