// Owns the keys of `sluice serve`'s process tree: how many serving processes share the listeners (bin/supervisor.ts)
// and how many worker threads each gives its CPU pool (mta/cpu-pool.ts).
import os from 'node:os';
import { key } from './key-def.js';
import { integer } from './values.js';

/** `server.processes`: the children a supervising primary keeps running (ARCHITECTURE: "Every core"). */
export const SERVER_KEYS = {
  processes: key({
    doc: 'Serving processes `sluice serve` runs: each runs every role it was given, on the same listeners (SO_REUSEPORT: the kernel spreads connections) and the same store, under a primary that restarts a dead one and passes signals on; 1 (the default: two children relayed small messages faster on one 2-core machine and barely on another, at more CPU per message, and the tree holds 284 MB of RSS idle, over the 250 MB budget of a 2-core VM) runs one process and no primary; the number of cores is the intended default. The request budgets send.rate_per_second and the 100 per second of /inbound/v1 are divided among them (the SMTP AUTH and console login throttles are not divided: they count in the store, shared by every process and node).',
    // 1 until a tree pays on 2 cores in memory too. Measured 2026-11-28 (bench:relay and bench:outbound, 1,000 and
    // 1,500 messages, quieter machine): 2 processes relayed 4 KB at 1.22× / 1.42× Postfix (10 / 50 sessions) where
    // one did 0.93–1.06× / 1.08–1.12×, 100 KB alike (0.75× vs 0.72–0.80×), outbound 1.53× vs 1.16–1.36×; but the
    // tree held 352 MB idle (primary 67, children 143–151) against one process's 146 MB; since the primary loads no
    // server module and mailauth's BIMI and selfsigned stay unloaded: 290 MB (54 + 121 + 115) 5 s after start, 327
    // right after 300 MX messages, 291 MB 60 s later (ff933c1 in the same run: 310 / 350 / 313); 292 / 324 / 310
    // in a later run of bench:tree-memory; with the idle trimmer (bin/idle-trim.ts, 2026-12-03): 284 MB (56 + 117 +
    // 112) 5 s after start, 333–336 right after the burst, 303 MB 15 s later (two runs alike); the operator opts in.
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
