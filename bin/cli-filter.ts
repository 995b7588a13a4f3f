// Owns `sluice filter`: training the inbound classifier from the operator's own mail (mbox files, .eml files,
// maildir folders), its statistics and its reset.
import fs from 'node:fs';
import path from 'node:path';
import type { BayesClassifier } from '../filters/bayes.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { BayesClass, BayesScope, BayesStore, LearnOutcome } from '../storage/ports/bayes.js';
import { requireAccount, UsageError, type CliIo } from './cli-common.js';

/** Messages per learn commit: one fsync per batch, and a running server waits at most one batch for the lock. */
const BATCH = 200;
/** Files larger than this are not read (a mailbox export that large is better split). */
const MAX_FILE_BYTES = 2 * 1024 * 1024 * 1024;

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

/** The messages under `p`: a file (mbox when it starts with `From `, else one message) or every file of a tree. */
export function readMessages(p: string): Buffer[] {
  const stat = fs.statSync(p);
  if (stat.isDirectory()) {
    return fs
      .readdirSync(p)
      .filter((n) => !n.startsWith('.'))
      .sort()
      .flatMap((n) => readMessages(path.join(p, n)));
  }
  if (!stat.isFile() || stat.size === 0) return [];
  if (stat.size > MAX_FILE_BYTES) throw new Error(`${p}: larger than 2 GB; split it`);
  const data = fs.readFileSync(p);
  return data.subarray(0, 5).toString('latin1') === 'From ' ? splitMbox(data) : [data];
}

const scopeName = (scope: BayesScope, handle?: string) => (scope === null ? 'the global model' : `the model of account ${handle}`);

/** `sluice filter train|stats|reset`. */
export async function filterCommand(
  sub: string | undefined,
  opts: { spam?: string[]; ham?: string[]; account?: string; json?: boolean },
  accounts: AccountStore,
  deps: { classifier: BayesClassifier; store: BayesStore; minLearned: number },
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
    for (const [cls, p] of sources) {
      const messages = readMessages(path.resolve(io.cwd, p));
      for (let i = 0; i < messages.length; i += BATCH) {
        const outcomes = await deps.classifier.learn(scope, messages.slice(i, i + BATCH).map((raw) => ({ raw, cls })), now());
        for (const o of outcomes) tally[cls][o]++;
      }
    }
    const stats = await deps.store.stats(scope);
    if (opts.json) {
      io.stdout(JSON.stringify({ scope: opts.account ?? 'global', trained: tally, model: stats }) + '\n');
      return 0;
    }
    const line = (cls: BayesClass) =>
      `${tally[cls].learned} ${cls} learned, ${tally[cls].relearned} moved from ${cls === 'spam' ? 'ham' : 'spam'}, ${tally[cls].already} known already`;
    io.stdout(`${line('spam')}; ${line('ham')} into ${name}\n`);
    io.stdout(modelLine(stats.learned, stats.tokens, deps.minLearned));
    return 0;
  }
  if (sub === 'stats') {
    const stats = await deps.store.stats(scope);
    io.stdout(opts.json ? JSON.stringify({ scope: opts.account ?? 'global', ...stats }) + '\n' : `${name}: ${modelLine(stats.learned, stats.tokens, deps.minLearned)}`);
    return 0;
  }
  if (sub === 'reset') {
    await deps.store.reset(scope, now());
    io.stdout(`${name} forgot everything it learned\n`);
    return 0;
  }
  throw new UsageError('usage: sluice filter train|stats|reset');
}

function modelLine(learned: { spam: number; ham: number }, tokens: number, min: number): string {
  const ready = learned.spam >= min && learned.ham >= min;
  return (
    `model: ${learned.spam} spam, ${learned.ham} ham, ${tokens} tokens; ` +
    (ready ? 'it scores mail\n' : `it abstains until it holds ${min} of each (filters.bayes.min_learned; an account's own learning adds to the global model's)\n`)
  );
}
