// Owns the worker-thread side of the CPU pool (./cpu-pool.ts): it runs the pure steps it is sent (tokenising,
// mailauth's authentication with its DNS asked of the main thread) and posts their results back.
import { parentPort } from 'node:worker_threads';
import { tokenizeMessage } from '../filters/bayes-tokens.js';
import { checkAuthentication } from '../filters/inbound-auth.js';
import type { PoolReply, PoolRequest } from './cpu-pool.js';

const port = parentPort;
if (!port) throw new Error('cpu-pool-worker runs as a worker thread only');

/** DNS questions in flight, by call id: the main thread owns the resolver and its cache (one per process). */
const dnsCalls = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
let nextCall = 0;

/**
 * The resolver mailauth gets here for task `id`: each question goes to the resolver the main thread gave that task
 * (the process's one DNS cache) and its answer comes back.
 */
function remoteResolver(id: number): (name: string, rrtype: string) => Promise<unknown> {
  return (name, rrtype) => {
    const call = ++nextCall;
    return new Promise((resolve, reject) => {
      dnsCalls.set(call, { resolve, reject });
      port!.postMessage({ kind: 'dns', id, call, name, rrtype } satisfies PoolReply);
    });
  };
}

async function run(req: Extract<PoolRequest, { kind: 'task' }>): Promise<unknown> {
  const bytes = Buffer.from(req.bytes);
  switch (req.task.name) {
    case 'tokenize':
      return tokenizeMessage(bytes);
    case 'authenticate':
      return checkAuthentication({ ...req.task.input, raw: bytes }, { resolver: remoteResolver(req.id), authservId: req.task.authservId });
  }
}

port.on('message', (req: PoolRequest) => {
  if (req.kind === 'dns-answer') {
    const call = dnsCalls.get(req.call);
    dnsCalls.delete(req.call);
    if (!call) return;
    if (req.ok) call.resolve(req.value);
    // The resolver's contract is an error whose `code` says what kind of failure (ENOTFOUND, ENODATA, other).
    else call.reject(Object.assign(new Error(req.message), { code: req.code }));
    return;
  }
  run(req).then(
    (value) => port.postMessage({ kind: 'done', id: req.id, ok: true, value } satisfies PoolReply),
    (err: unknown) => port.postMessage({ kind: 'done', id: req.id, ok: false, message: (err as Error)?.message ?? String(err) } satisfies PoolReply),
  );
});
