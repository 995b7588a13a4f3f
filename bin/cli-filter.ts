// Owns `sluice filter`: training the inbound classifier from the operator's own mail (mbox files, .eml files,
// maildir folders), its statistics and its reset.
import fs from 'node:fs';
import path from 'node:path';
import { learnItem } from '../filters/bayes.js';
import { TOKENIZER_VERSION } from '../filters/bayes-tokens.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { BayesClass, BayesModelStats, BayesScope, BayesStore, LearnItem, LearnOutcome } from '../storage/ports/bayes.js';
import { requireAccount, UsageError, type CliIo } from './cli-common.js';

/**
 * Messages per learn commit: one fsync per batch, and a running server waits at most one batch for the lock. A batch
 * holds each message's tokens only: the message itself is dropped once tokenized, so a maildir of any size is read
 * one message at a time (issue 31 finding 8).
 */
const BATCH = 200;
/** Files larger than this are not read (a mailbox export that large is better split). */
const MAX_FILE_BYTES = 2 * 1024 * 1024 * 1024;
const LF = 0x0a;

/**
 * The messages of an mbox (RFC 4155): split at each line starting `From ` that opens the file or follows an empty
 * line; the separator line is dropped and mboxrd's quoting (`>From `, `>>From `) is undone by one `>`.
 */
export function splitMbox(data: Buffer): Buffer[] {
  const text = data.toString('latin1');
  const starts: number[] = [];
  const re = /(^|\n\r?\n|^\r?\n)From [^\n]*\n/g;
  for (let m = re.exec(text); m; m = re.exec(text)) starts.push(m.index + m[1]!.length);
  return starts.map((start, i) => {
    const body = text.slice(text.indexOf('\n', start) + 1, starts[i + 1] ?? text.length);
    return Buffer.from(body.replace(/^>(>*From )/gm, '$1'), 'latin1');
  });
}

/** The lines of `file`, each with its line ending (the last may have none), holding one chunk and one line at a time. */
async function* linesOf(file: string): AsyncGenerator<Buffer> {
  let rest = Buffer.alloc(0);
  for await (const chunk of fs.createReadStream(file)) {
    let data = rest.length > 0 ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
    for (let nl = data.indexOf(LF); nl >= 0; nl = data.indexOf(LF)) {
      yield data.subarray(0, nl + 1);
      data = data.subarray(nl + 1);
    }
    rest = Buffer.from(data);
  }
  if (rest.length > 0) yield rest;
}

const isBlank = (line: Buffer) => line.length === 1 || (line.length === 2 && line[0] === 0x0d);
const MBOX_FROM = Buffer.from('From ', 'latin1');
const QUOTED_FROM = /^>+From /;

/** The messages of the mbox `file` as `splitMbox` cuts them, one at a time: a mailbox is never held whole. */
async function* streamMbox(file: string): AsyncGenerator<Buffer> {
  let message: Buffer[] | undefined;
  let afterBlank = true; // the file's first line may open a message (RFC 4155)
  for await (const line of linesOf(file)) {
    if (afterBlank && line.subarray(0, 5).equals(MBOX_FROM)) {
      if (message) yield Buffer.concat(message);
      message = [];
    } else if (message) {
      message.push(line[0] === 0x3e && QUOTED_FROM.test(line.subarray(0, 64).toString('latin1')) ? line.subarray(1) : line);
    }
    afterBlank = isBlank(line);
  }
  if (message) yield Buffer.concat(message);
}

/**
 * The messages under `p`, one at a time: a file (mbox when it starts with `From `, else one message) or every file of
 * a tree, its listing streamed (fs.opendir) in the order the file system gives it. Dot files are skipped.
 */
export async function* readMessages(p: string): AsyncGenerator<Buffer> {
  const stat = await fs.promises.stat(p);
  if (stat.isDirectory()) {
    for await (const entry of await fs.promises.opendir(p)) {
      if (!entry.name.startsWith('.')) yield* readMessages(path.join(p, entry.name));
    }
    return;
  }
  if (!stat.isFile() || stat.size === 0) return;
  if (stat.size > MAX_FILE_BYTES) throw new Error(`${p}: larger than 2 GB; split it`);
  const head = Buffer.alloc(5);
  const fh = await fs.promises.open(p);
  try {
    await fh.read(head, 0, 5, 0);
  } finally {
    await fh.close();
  }
  if (head.equals(MBOX_FROM)) yield* streamMbox(p);
  else yield await fs.promises.readFile(p);
}

const scopeName = (scope: BayesScope, handle?: string) => (scope === null ? 'the global model' : `the model of account ${handle}`);

/**
 * `sluice filter train|stats|reset`. Training learns into `deps.store` directly, with filters/bayes.ts's learnItem as
 * the classifier does, so that a batch holds tokens, not messages.
 */
export async function filterCommand(
  sub: string | undefined,
  opts: { spam?: string[]; ham?: string[]; account?: string; json?: boolean },
  accounts: AccountStore,
  deps: { store: BayesStore; minLearned: number; maxTokens: number },
  io: CliIo,
  now: () => number,
): Promise<number> {
  const scope: BayesScope = opts.account === undefined ? null : (await requireAccount(accounts, opts.account)).id;
  const name = scopeName(scope, opts.account);
  if (sub === 'train') {
    const sources: [BayesClass, string][] = [
      ...(opts.spam ?? []).map((p): [BayesClass, string] => ['spam', p]),
      ...(opts.ham ?? []).map((p): [BayesClass, string] => ['ham', p]),
    ];
    if (sources.length === 0) throw new UsageError('usage: sluice filter train --spam PATH --ham PATH [--account H]');
    const tally: Record<BayesClass, Record<LearnOutcome, number>> = {
      spam: { learned: 0, relearned: 0, already: 0 },
      ham: { learned: 0, relearned: 0, already: 0 },
    };
    const before = await deps.store.stats(scope);
    if (outdated(before)) {
      io.stdout(`${name} held ${before.learned.spam} spam and ${before.learned.ham} ham learned with tokeniser ${before.tokenizer}; this version's is ${TOKENIZER_VERSION}: it starts again\n`);
    }
    for (const [cls, p] of sources) {
      let batch: LearnItem[] = [];
      const flush = async () => {
        for (const o of await deps.store.learn(scope, batch, now(), deps.maxTokens, TOKENIZER_VERSION)) tally[cls][o]++;
        batch = [];
      };
      for await (const raw of readMessages(path.resolve(io.cwd, p))) {
        batch.push(learnItem(raw, cls));
        if (batch.length >= BATCH) await flush();
      }
      if (batch.length > 0) await flush();
    }
    const stats = await deps.store.stats(scope);
    if (opts.json) {
      io.stdout(JSON.stringify({ scope: opts.account ?? 'global', trained: tally, model: stats }) + '\n');
      return 0;
    }
    const line = (cls: BayesClass) =>
      `${tally[cls].learned} ${cls} learned, ${tally[cls].relearned} moved from ${cls === 'spam' ? 'ham' : 'spam'}, ${tally[cls].already} known already`;
    io.stdout(`${line('spam')}; ${line('ham')} into ${name}\n`);
    io.stdout(modelLine(stats, deps.minLearned));
    return 0;
  }
  if (sub === 'stats') {
    const stats = await deps.store.stats(scope);
    io.stdout(opts.json ? JSON.stringify({ scope: opts.account ?? 'global', ...stats, outdated: outdated(stats) }) + '\n' : `${name}: ${modelLine(stats, deps.minLearned)}`);
    return 0;
  }
  if (sub === 'reset') {
    await deps.store.reset(scope, now());
    io.stdout(`${name} forgot everything it learned\n`);
    return 0;
  }
  throw new UsageError('usage: sluice filter train|stats|reset');
}

/** A model holding messages learned with another tokeniser than this version's (not used; its next learn resets it). */
const outdated = (m: BayesModelStats) => m.tokenizer !== TOKENIZER_VERSION && m.learned.spam + m.learned.ham > 0;

function modelLine(m: BayesModelStats, min: number): string {
  const { learned, tokens } = m;
  if (outdated(m)) {
    return (
      `model: ${learned.spam} spam, ${learned.ham} ham, ${tokens} tokens, learned with tokeniser ${m.tokenizer}; this version's is ` +
      `${TOKENIZER_VERSION}, so it is not used: train it again (sluice filter reset, then sluice filter train), or its next learn starts it again\n`
    );
  }
  const ready = learned.spam >= min && learned.ham >= min;
  return (
    `model: ${learned.spam} spam, ${learned.ham} ham, ${tokens} tokens; ` +
    (ready ? 'it scores mail\n' : `it abstains until it holds ${min} of each (filters.bayes.min_learned; an account's own learning adds to the global model's)\n`)
  );
}
