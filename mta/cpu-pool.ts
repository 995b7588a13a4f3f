// Owns the CPU pool: worker threads that run the pure, CPU-heavy steps of a large inbound message (the classifier's
// tokenising, mailauth's SPF/DKIM/DMARC/ARC pass over the message) so the event loop keeps serving sessions.
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { tokenizeMessage } from '../filters/bayes-tokens.js';
import { checkAuthentication, type AuthInput, type AuthResolver, type AuthVerdict } from '../filters/inbound-auth.js';
import { bodySigned } from './message-content.js';

/** A step the pool runs (the worker imports the same functions, so the result is the one the event loop would get). */
export type PoolTask =
  | { name: 'tokenize' }
  | { name: 'authenticate'; input: Omit<AuthInput, 'raw'>; authservId: string };

/** Main thread → worker: a task over `bytes`, or the answer to a DNS question the worker asked. */
export type PoolRequest =
  | { kind: 'task'; id: number; task: PoolTask; bytes: ArrayBuffer }
  | { kind: 'dns-answer'; call: number; ok: true; value: unknown }
  | { kind: 'dns-answer'; call: number; ok: false; message: string; code: string | undefined };

/** Worker → main thread: a task's outcome, or a DNS question of task `id`. */
export type PoolReply =
  | { kind: 'done'; id: number; ok: true; value: unknown }
  | { kind: 'done'; id: number; ok: false; message: string }
  | { kind: 'dns'; id: number; call: number; name: string; rrtype: string };

/**
 * Bytes below which a step stays on the event loop: handing a message to a worker (copy, post, wake, clone the
 * result back) costs about what tokenising or authenticating 16 KiB does (measured on 2 cores, issue 32).
 */
export const OFFLOAD_MIN_BYTES = 16 * 1024;
/**
 * Tasks one worker holds at most (one running, one waiting): past that the event loop runs the step itself, so a
 * busy pool never makes a message wait while the main thread has a core.
 */
const MAX_IN_FLIGHT = 2;

export interface CpuPool {
  /** Worker threads (0: every step runs on the event loop). */
  readonly threads: number;
  /** `tokenizeMessage(raw)` (filters/bayes-tokens.ts), on a worker when `raw` is large enough and one has room. */
  tokenize(raw: Buffer): Promise<string[]>;
  /**
   * `checkAuthentication` (filters/inbound-auth.ts) of one message: on a worker over `whole` (the message's bytes,
   * when held whole, large enough and DKIM- or ARC-signed), its DNS questions answered by `deps.resolver` here;
   * otherwise here over `open()`. The verdict is the same either way.
   */
  authenticate(
    msg: Omit<AuthInput, 'raw'> & { whole: Buffer | undefined; open: () => Readable },
    deps: { resolver: AuthResolver; authservId: string },
  ): Promise<AuthVerdict>;
  /**
   * Steps run so far: on a worker, on the event loop (too small, unsigned, every worker busy, or no pool), and failed
   * over to the event loop (their worker stopped or threw).
   */
  readonly counts: { readonly offloaded: number; readonly inline: number; readonly failedOver: number };
  /** Stops the workers; later calls run on the event loop. */
  close(): Promise<void>;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  resolver?: AuthResolver;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Tasks it answered: a worker that dies before its first answer is not started again (no restart loop). */
  answered: number;
}

/**
 * A pool of `threads` workers (`server.cpu_threads`), started at the first task that pays. A worker that dies fails
 * its tasks over to the event loop (the step runs here, as without a pool) and is replaced (unless it died before
 * answering once); an exception inside a step is re-raised by running the step here, so callers see exactly what
 * they would without the pool.
 */
export function createCpuPool(opts: { threads: number; logger: Logger }): CpuPool {
  const log = opts.logger.child({ component: 'cpu-pool' });
  const slots: Slot[] = [];
  let nextId = 0;
  let closed = false;

  function start(): Slot {
    const worker = new Worker(new URL('./cpu-pool-worker.js', import.meta.url));
    const slot: Slot = { worker, pending: new Map(), answered: 0 };
    worker.unref();
    worker.on('message', (reply: PoolReply) => {
      if (reply.kind === 'dns') {
        const resolver = slot.pending.get(reply.id)?.resolver;
        const answer = (m: PoolRequest) => worker.postMessage(m);
        if (!resolver) return answer({ kind: 'dns-answer', call: reply.call, ok: false, message: 'no resolver', code: undefined });
        resolver(reply.name, reply.rrtype).then(
          (value) => answer({ kind: 'dns-answer', call: reply.call, ok: true, value }),
          (err: unknown) => answer({ kind: 'dns-answer', call: reply.call, ok: false, message: (err as Error)?.message ?? String(err), code: (err as NodeJS.ErrnoException)?.code }),
        );
        return;
      }
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      slot.answered++;
      if (slot.pending.size === 0) worker.unref();
      if (reply.ok) p.resolve(reply.value);
      else p.reject(new Error(reply.message));
    });
    const fail = (err: Error) => {
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
      const at = slots.indexOf(slot);
      if (at < 0) return;
      if (closed) return void slots.splice(at, 1);
      if (slot.answered === 0) {
        // It never worked (a broken install, no memory for a thread): its share of steps stays on the event loop.
        log.error({ err: err.message }, 'cpu pool worker failed before its first task; not restarted');
        return void slots.splice(at, 1);
      }
      log.error({ err: err.message }, 'cpu pool worker stopped; replaced');
      slots[at] = start();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`cpu pool worker exited with ${code}`)));
    return slot;
  }
  let started = false;

  /** Posts `task` over a copy of `bytes` to the least busy worker; undefined when none should take it. */
  function offload(task: PoolTask, bytes: Buffer, resolver?: AuthResolver): Promise<unknown> | undefined {
    if (closed || bytes.length < OFFLOAD_MIN_BYTES) return undefined;
    // Started at the first large message: a server (or a test) that never sees one holds no thread and no memory.
    if (!started) {
      started = true;
      for (let i = 0; i < opts.threads; i++) slots.push(start());
    }
    let slot: Slot | undefined;
    for (const s of slots) if (s.pending.size < MAX_IN_FLIGHT && (!slot || s.pending.size < slot.pending.size)) slot = s;
    if (!slot) return undefined;
    // A copy of its own, transferred (not cloned): the sample may be a view into a larger buffer still in use.
    const copy = new ArrayBuffer(bytes.length);
    new Uint8Array(copy).set(bytes);
    const id = ++nextId;
    const target = slot;
    return new Promise((resolve, reject) => {
      target.pending.set(id, { resolve, reject, ...(resolver ? { resolver } : {}) });
      target.worker.ref();
      target.worker.postMessage({ kind: 'task', id, task, bytes: copy } satisfies PoolRequest, [copy]);
    });
  }

  const counts = { offloaded: 0, inline: 0, failedOver: 0 };
  /** The worker's result, or `inline()`'s when there is no worker for it or the worker failed. */
  async function either<T>(remote: Promise<unknown> | undefined, inline: () => T | Promise<T>): Promise<T> {
    if (!remote) {
      counts.inline++;
      return inline();
    }
    counts.offloaded++;
    try {
      return (await remote) as T;
    } catch {
      counts.failedOver++;
      return inline();
    }
  }

  return {
    threads: opts.threads,
    counts,
    tokenize: (raw) => either(offload({ name: 'tokenize' }, raw), () => tokenizeMessage(raw)),
    authenticate(msg, deps) {
      const { whole, open, ...input } = msg;
      // Unsigned, authentication is SPF and DMARC look-ups the event loop answers anyway: handing it over cost more CPU
      // than it saved (measured: a 90 KB unsigned message 0.5 ms on the loop inline, 0.3 ms handed over but 1.0 ms in
      // all; signed, 2.5 ms inline against 0.4 ms on the loop handed over, the same in all).
      const remote = whole && bodySigned(whole) ? offload({ name: 'authenticate', input, authservId: deps.authservId }, whole, deps.resolver) : undefined;
      return either(remote, () => checkAuthentication({ ...input, raw: open() }, deps));
    },
    async close() {
      closed = true;
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
