// Owns `npm run bench:tree-memory`: the idle memory of `sluice serve`'s whole process tree (issue 32: ≤ 250 MB with
// the default process count on 2 cores), 5 s after start, right after a burst of MX mail, and once settled after it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { machineLine } from './cpu.js';
import { provisionExampleTest, spawnServe } from './serve.js';

/** Messages of the burst (BENCH_MESSAGES), their body size (BENCH_MESSAGE_KB) and the wait after it (BENCH_SETTLE_SECS). */
const N = Number(process.env.BENCH_MESSAGES ?? 300);
const KB = Number(process.env.BENCH_MESSAGE_KB ?? 4);
const SETTLE_MS = Number(process.env.BENCH_SETTLE_SECS ?? 60) * 1000;
/** The burst must have been relayed within this (house rule: bounded waits). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_SECS ?? 300) * 1000;
const SESSIONS = 10;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kb = (pid: number, file: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8'))?.[1] ?? 0);

/** The pid and its descendants (the primary, its serving children, their CPU pool has no process of its own). */
function treePids(root: number): number[] {
  const kids = (p: number): number[] => {
    let out: string;
    try {
      out = execFileSync('pgrep', ['-P', String(p)]).toString();
    } catch {
      return []; // pgrep exits 1 when there is none
    }
    return out.split('\n').filter(Boolean).map(Number).flatMap((c) => [c, ...kids(c)]);
  };
  return [root, ...kids(root)];
}

/**
 * One line: each process's VmRSS (RssAnon + RssFile) and the tree's sum, which counts the node binary's shared pages
 * once per process, then the tree's proportional set size (smaps_rollup Pss), which counts each page once.
 */
function treeLine(label: string, root: number): string {
  const pids = treePids(root);
  const mb = (k: number) => (k / 1024).toFixed(0);
  const each = pids.map((p) => `${p}: ${mb(kb(p, 'status', 'VmRSS'))} (anon ${mb(kb(p, 'status', 'RssAnon'))} file ${mb(kb(p, 'status', 'RssFile'))})`);
  const rss = pids.reduce((s, p) => s + kb(p, 'status', 'VmRSS'), 0);
  const pss = pids.reduce((s, p) => s + kb(p, 'smaps_rollup', 'Pss'), 0);
  return `${label.padEnd(22)} tree RSS ${mb(rss)} MB, PSS ${mb(pss)} MB | ${each.join(' | ')}`;
}

async function main(): Promise<void> {
  let relayed = 0;
  const sink = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, _session, cb) {
      stream.resume();
      stream.on('end', () => {
        relayed++;
        cb();
      });
    },
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-tree-memory-'));
  const env = {
    ...process.env,
    SLUICE_DATA_DIR: dataDir,
    SLUICE_HTTP_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_HOSTNAME: 'bench.sluice.test',
    SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    // No DNS server: every look-up is refused at once (temperror), so the burst runs the filters without waiting.
    SLUICE_DNS_SERVERS: '127.0.0.1:9',
    SLUICE_LOG_LEVEL: 'info',
  };
  console.log(machineLine());
  const { child, info } = await spawnServe(env, { profile: false });
  try {
    await sleep(5000);
    console.log(treeLine('5 s after start', child.pid!));
    await provisionExampleTest(env, info.http!, (sink.server.address() as AddressInfo).port);
    const [host, port] = [info.mx!.slice(0, info.mx!.lastIndexOf(':')), Number(info.mx!.slice(info.mx!.lastIndexOf(':') + 1))];
    const text = 'x'.repeat(KB * 1024);
    const started = Date.now();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, k) => {
        const t = nodemailer.createTransport({ host, port, secure: false, ignoreTLS: true });
        for (let i = k; i < N; i += SESSIONS) await t.sendMail({ from: 'a@sender.bench.test', to: `u${i}@example.test`, subject: `m${i}`, text });
        t.close();
      }),
    );
    while (relayed < N && Date.now() - started < DEADLINE_MS) await sleep(100);
    if (relayed < N) throw new Error(`only ${relayed} of ${N} messages relayed within ${DEADLINE_MS / 1000} s`);
    console.log(`burst: ${N} × ${KB} KB over ${SESSIONS} sessions relayed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log(treeLine('right after the burst', child.pid!));
    await sleep(SETTLE_MS);
    console.log(treeLine(`${SETTLE_MS / 1000} s after the burst`, child.pid!));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    sink.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
