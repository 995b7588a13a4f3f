// Owns the body-threshold benchmark: the accept of one message (body write + queue commit, fsync on) with its body
// inline in the commit vs spooled to a file first, for 4 KiB to 1 MiB (BENCH_SIZES_KIB, comma-separated KiB); prints
// medians (INLINE_MAX_BYTES's figures).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { AcceptRecord } from '../storage/ports/queue.js';
import { openSqliteStore } from '../storage/sqlite/store.js';
import { machineLine } from './cpu.js';

const SIZES_KIB = (process.env.BENCH_SIZES_KIB ?? '4,16,64,128,256,512,1024').split(',').map(Number);
/** Accepts measured per size and mode (a bounded loop), after WARMUP unmeasured ones. */
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const WARMUP = 20;

function record(accountId: number, body: AcceptRecord['message']['body'], size: number, at: number): AcceptRecord {
  return {
    message: {
      accountId, kind: 'outbound', sendRequestId: `r${at}`, messageId: `${at}@bench.test`, mailFrom: 'a@bench.test', fromEmail: 'a@bench.test',
      subject: 'bench', campaignId: null, transactional: true, body, size, auth: null, upstream: null, upstreamHostname: null, senderId: null,
      createdAt: at, expiresAt: at + 86_400_000, verdicts: null, tracking: 0, verp: false,
    },
    deliveries: [{ rcpt: 'b@dest.test', domain: 'dest.test', state: 'queued' }],
    events: [],
  };
}

async function measure(kib: number, mode: 'inline' | 'spooled'): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-bodies-'));
  // Inline: the threshold above the body; spooled: below it.
  const store = openSqliteStore(dir, { now: Date.now, inlineMaxBytes: mode === 'inline' ? 1 << 30 : 0 });
  try {
    const res = await store.accounts.createAccount({ handle: 'bench', companyName: null, parentId: null, now: Date.now() });
    if (!res.ok) throw new Error('account');
    const bytes = Buffer.alloc(kib * 1024, 'x');
    const times: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const t0 = process.hrtime.bigint();
      // A stream, as the MX and submission hand bodies over (16 KiB chunks).
      const chunks = Array.from({ length: Math.ceil(bytes.length / 16384) }, (_, k) => bytes.subarray(k * 16384, (k + 1) * 16384));
      const body = await store.bodies.write(Readable.from(chunks, { objectMode: false }));
      await store.queue.accept([record(res.value.id, body, bytes.length, Date.now())]);
      if (i >= WARMUP) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)] as number;
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

console.log(machineLine());
console.log(`accept of one message (body write + commit, fsync on), median of ${RUNS}, data_dir on ${os.tmpdir()}`);
for (const kib of SIZES_KIB) {
  const inline = await measure(kib, 'inline');
  const spooled = await measure(kib, 'spooled');
  console.log(`${String(kib).padStart(4)} KiB  inline ${inline.toFixed(2)} ms  spooled ${spooled.toFixed(2)} ms`);
}
