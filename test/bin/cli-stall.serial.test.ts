// Owns the event-loop bound of issue 31 for CLI commands: the heavy ones, run against the data_dir of a serving
// Sluice that is delivering what they touch, never stall the server's event loop 100 ms.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { message } from '../helpers/accept-record.js';
import { outboundWorld } from '../helpers/outbound-world.js';
import { BIN } from '../helpers/serve-binary.js';
import { createClock, tempDir, testEnv } from '../helpers/stack.js';
import { commandRunner, judgeStalls, measured, probesAnswered, runStallChild, STALL_CHILD, type Facts } from '../helpers/stall.js';

/** Queued deliveries the CLI lists and retries while the server delivers them. */
const QUEUED = 1000;
/** Messages of each class `filter train` learns (each ~300 words of a large vocabulary: many new tokens). */
const TRAIN = 300;

/** Writes `n` messages of random words under `dir` (one .eml each), as a maildir's worth of mail to learn. */
function corpus(dir: string, n: number, kind: string): string {
  fs.mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const words = Array.from({ length: 300 }, () => `${kind}${crypto.randomBytes(3).toString('hex')}`).join(' ');
    fs.writeFileSync(path.join(dir, `${i}.eml`), `From: a${i}@${kind}.test\r\nSubject: ${kind} ${i}\r\n\r\n${words}\r\n`);
  }
  return dir;
}

/** Queue, filter, backup and report commands while the server delivers what they touch and is probed. */
async function cli(t: Test): Promise<Facts> {
  // The server's clock is real time an hour on, so what a command makes due (by its own clock) is due for the server.
  const clock = createClock(Date.now() + 3_600_000);
  const w = await outboundWorld(t, { clock, startWorker: true });
  // Queued straight into the store, due in a day: nothing moves until `queue retry --all` makes them due.
  const store = w.stack.store;
  const due = clock.now() + 86_400_000;
  for (let i = 0; i < QUEUED; i += 100) {
    await store.queue.accept(await Promise.all(Array.from({ length: 100 }, (_, j) => message(store, w.accountId, [`q${i + j}@rcpt.test`], due))));
  }
  const work = tempDir(t);
  const spam = corpus(path.join(work, 'spam'), TRAIN, 'spam');
  const ham = corpus(path.join(work, 'ham'), TRAIN, 'ham');
  const env = { ...process.env, ...testEnv(w.stack.dataDir, { SLUICE_DNS_SERVERS: w.dns.address }) };
  // The runner's and the measurement's own variables are not Sluice's (an unknown SLUICE_* is a configuration error).
  for (const name of ['NODE_OPTIONS', 'SLUICE_STALL_CHILD']) delete env[name];
  const ran: string[] = [];
  // Commands start from a process of their own, as from an operator's shell (see commandRunner).
  const runner = commandRunner(t, env, w.stack.dataDir);
  const sluice = async (...argv: string[]) => {
    await runner.run(process.execPath, [BIN, ...argv]).catch((err: Error) => Promise.reject(new Error(`sluice ${argv.join(' ')}: ${err.message}`)));
    ran.push(argv.slice(0, argv[0] === 'backup' ? 1 : 2).join(' '));
  };
  let check: NodeJS.Timeout | undefined;
  const delivered = new Promise<void>((resolve) => {
    check = setInterval(() => {
      if (w.sink.messages.length >= QUEUED) resolve(void clearInterval(check));
    }, 50);
  });
  t.teardown(() => clearInterval(check));
  const { probes } = await measured({ http: w.stack.http.port, mx: w.stack.mx.port }, async () => {
    await sluice('queue', 'list', '--limit', String(QUEUED), '--json');
    await sluice('queue', 'retry', '--all');
    await sluice('filter', 'train', '--spam', spam, '--ham', ham);
    await sluice('filter', 'stats', '--json');
    await sluice('metrics', 'volume', '--account', 'acme', '--json');
    await sluice('backup', path.join(work, 'backup'));
    await sluice('filter', 'reset');
    await delivered;
  });
  return { ran, delivered: w.sink.messages.length, probes };
}

if (STALL_CHILD) await runStallChild({ cli });
else {
  const { default: t } = await import('tap');
  t.test('CLI commands against a serving data_dir never stall the server\'s event loop 100 ms (measured in a process of its own)', async (t) => {
    judgeStalls(t, fileURLToPath(import.meta.url), 'cli', (t, f) => {
      t.same(f.ran, ['queue list', 'queue retry', 'filter train', 'filter stats', 'metrics volume', 'backup', 'filter reset'], 'every command exited 0');
      t.equal(f.delivered, QUEUED, 'the server delivered every retried message meanwhile');
      probesAnswered(t, f);
    });
  });
}
