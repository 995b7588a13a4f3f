// Owns the keys of `sluice serve`'s process tree: how many serving processes share the listeners (bin/supervisor.ts)
// and how many worker threads each gives its CPU pool (mta/cpu-pool.ts).
import os from 'node:os';
import { key } from './key-def.js';
import { integer } from './values.js';

/** `server.processes`: the children a supervising primary keeps running (ARCHITECTURE: "Every core"). */
export const SERVER_KEYS = {
  processes: key({
    doc: 'Serving processes `sluice serve` runs: each runs every role it was given, on the same listeners (SO_REUSEPORT: the kernel spreads connections) and the same store, under a primary that restarts a dead one and passes signals on; 1 (the default, until a tree measures faster on 2 cores) runs one process and no primary; the number of cores is the intended default. The request budgets send.rate_per_second and the 100 per second of /inbound/v1 are divided among them (the SMTP AUTH and console login throttles are not divided: they count in the store, shared by every process and node).',
    // 1 until a tree pays on 2 cores: 2 processes relayed large messages faster (10 × 100 KB: 0.73× → 0.91× Postfix)
    // but spent 25–35 % more CPU per small or outbound message, gained nothing outbound, held 2.9× the idle memory,
    // and lost throughput on a busy machine (issue 32 notes); the operator opts in.
    defaultText: '1',
    default: () => 1,
    parse: integer(1, 256, 'processes'),
  }),
  cpuThreads: key({
    doc: 'Worker threads of each serving process\'s CPU pool: they tokenise inbound messages of 16 KiB and more for the classifier, and authenticate (SPF, DKIM, DMARC, ARC) those of them that carry a DKIM or ARC signature, off the event loop, with the same results; started at the first such message; 0 runs every step on the event loop.',
    defaultText: 'cores − 1 (at least 1)',
    // One core stays the event loop's; the pool takes the rest (issue 32: 10 sessions × 100 KB saturated one loop
    // while the second core was partly idle).
    default: () => Math.max(1, os.availableParallelism() - 1),
    parse: integer(0, 256, 'threads'),
  }),
};
