// Owns the keys of `sluice serve`'s process tree: how many serving processes share the listeners (bin/supervisor.ts).
import { key } from './key-def.js';
import { integer } from './values.js';

/** `server.processes`: the children a supervising primary keeps running (ARCHITECTURE: "Every core"). */
export const SERVER_KEYS = {
  processes: key({
    doc: 'Serving processes `sluice serve` runs: each runs every role it was given, on the same listeners (SO_REUSEPORT: the kernel spreads connections) and the same store, under a primary that restarts a dead one and passes signals on; 1 (the default, until a tree measures faster on 2 cores) runs one process and no primary; the number of cores is the intended default. The request budgets send.rate_per_second and the 100 per second of /inbound/v1 are divided among them (the SMTP AUTH and console login throttles are not: each process keeps its own).',
    // 1 until a tree pays on 2 cores: 2 processes relayed large messages faster (10 × 100 KB: 0.73× → 0.91× Postfix)
    // but spent 25–35 % more CPU per small or outbound message, gained nothing outbound, held 2.9× the idle memory,
    // and lost throughput on a busy machine (issue 32 notes); the operator opts in.
    defaultText: '1',
    default: () => 1,
    parse: integer(1, 256, 'processes'),
  }),
};
