// Owns the primary of `sluice serve` when server.processes > 1: forks the serving children (node:cluster), hands the
// first child's bound ports to the others, restarts a dead child with backoff, passes signals on, and collects the
// children's metrics for the child a scrape reached. It loads no prom-client, pino or server module (issue 32: memory).
import cluster, { type Worker } from 'node:cluster';
import type { PrimaryLogger } from './primary-log.js';
import { CHILD_SLOT_ENV, MSG, type ChildMessage } from './tree-messages.js';

/** A restart waits 250 ms, doubling per quick death up to 30 s; a child that served a minute resets the backoff. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 30_000;
const HEALTHY_AFTER_MS = 60_000;
/** A scrape's collection fails when a child has not answered within this (prom-client's cluster aggregator's 5 s). */
const COLLECT_TIMEOUT_MS = 5_000;

export interface SuperviseOptions {
  processes: number;
  logger: PrimaryLogger;
  /** Resolves on SIGINT/SIGTERM: every child is told to drain (SIGTERM) and the primary waits for them. */
  stop: Promise<void>;
  now: () => number;
  /** Called once every child serves; returns what to call when the tree has stopped (the pid registry entry). */
  up?: () => () => void;
}

interface Slot {
  index: number;
  worker: Worker | undefined;
  startedAt: number;
  quickDeaths: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Runs the tree until `stop`; resolves to the exit code. The primary opens no store and binds no listener: child 0
 * starts alone (it runs the migrations and makes the first key), reports the ports it bound (port 0 resolved), and
 * the others start on those same ports with SO_REUSEPORT. A child that fails to start before the tree is up ends the
 * tree with its exit code (its own stderr line says why); one that dies later is started again.
 */
export async function supervise(o: SuperviseOptions): Promise<number> {
  const { logger } = o;
  // Listener keys as env variables (SLUICE_HTTP_LISTEN=127.0.0.1:40123): the configuration's env layer wins over the file.
  const portEnv: Record<string, string> = {};
  const slots: Slot[] = Array.from({ length: o.processes }, (_, index) => ({ index, worker: undefined, startedAt: 0, quickDeaths: 0, timer: undefined }));
  let stopping = false;
  let up = false;
  let failed: ((code: number) => void) | undefined;
  const startFailed = new Promise<number>((resolve) => (failed = resolve));
  // A scrape of /metrics: every connected child sends its registry as JSON; the asking child sums them (prom-client's
  // cluster aggregation, bin/tree-child.ts), so the primary need not load prom-client (~15 MB of RSS).
  let nextCollect = 0;
  const collecting = new Map<number, { parts: unknown[][]; pending: number; done: (parts: unknown[][] | Error) => void }>();
  const collect = (): Promise<unknown[][]> =>
    new Promise((resolve, reject) => {
      const id = nextCollect++;
      const timer = setTimeout(() => entry.done(new Error('a serving child did not send its metrics within 5 s')), COLLECT_TIMEOUT_MS);
      const entry = {
        parts: [] as unknown[][],
        pending: 0,
        done: (r: unknown[][] | Error) => {
          if (!collecting.delete(id)) return;
          clearTimeout(timer);
          if (r instanceof Error) reject(r);
          else resolve(r);
        },
      };
      collecting.set(id, entry);
      for (const s of slots) {
        if (s.worker?.isConnected()) {
          s.worker.send({ type: MSG.metricsCollect, id });
          entry.pending++;
        }
      }
      if (entry.pending === 0) entry.done([]);
    });

  const fork = (slot: Slot): Promise<boolean> => {
    slot.timer = undefined;
    slot.startedAt = o.now();
    const worker = cluster.fork({ ...portEnv, [CHILD_SLOT_ENV]: String(slot.index) });
    slot.worker = worker;
    return new Promise((resolve) => {
      worker.on('message', (m: ChildMessage) => {
        if (m?.type === MSG.ready) {
          if (slot.index === 0) Object.assign(portEnv, m.bound);
          resolve(true);
        } else if (m?.type === MSG.metricsRequest) {
          collect().then(
            (parts) => worker.isConnected() && worker.send({ type: MSG.metricsAnswer, id: m.id, parts }),
            (err: Error) => worker.isConnected() && worker.send({ type: MSG.metricsAnswer, id: m.id, error: err.message }),
          );
        } else if (m?.type === MSG.metricsPart) {
          const c = collecting.get(m.id);
          if (!c) return;
          if (m.error !== undefined || !m.metrics) return c.done(new Error(m.error ?? 'a serving child sent no metrics'));
          c.parts.push(m.metrics);
          if (--c.pending === 0) c.done(c.parts);
        }
      });
      worker.once('exit', (code, signal) => {
        resolve(false);
        slot.worker = undefined;
        if (stopping) return;
        if (!up) {
          failed?.(code ?? 1);
          return;
        }
        const lived = o.now() - slot.startedAt;
        slot.quickDeaths = lived >= HEALTHY_AFTER_MS ? 0 : slot.quickDeaths + 1;
        const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, slot.quickDeaths - 1));
        logger.warn({ child: slot.index, child_pid: worker.process.pid, code, signal, restart_in_ms: delay }, 'serving child died; starting it again');
        slot.timer = setTimeout(() => void fork(slot), delay);
      });
    });
  };

  // SIGHUP (systemctl reload, `sluice reload` on a pid registry of old): each child reloads its configuration.
  const onHup = () => {
    for (const s of slots) s.worker?.process.kill('SIGHUP');
  };
  process.on('SIGHUP', onHup);

  const started = (async () => {
    if (!(await fork(slots[0]!))) return false;
    return (await Promise.all(slots.slice(1).map((s) => fork(s)))).every(Boolean);
  })();
  const outcome = await Promise.race([started.then((ok) => (ok ? 'up' : 'failed')), startFailed.then(() => 'failed'), o.stop.then(() => 'stop')]);
  up = outcome === 'up';
  let down: (() => void) | undefined;
  if (up) {
    down = o.up?.();
    logger.info({ processes: o.processes, children: slots.map((s) => s.worker?.process.pid) }, 'serving children started');
    await o.stop;
  }
  stopping = true;
  process.off('SIGHUP', onHup);
  const code = outcome === 'failed' ? await startFailed : 0;
  logger.info({ children: slots.filter((s) => s.worker).length }, 'shutting down');
  // Each child drains as a single process does on SIGTERM (listeners closed, in-flight work finished or handed back).
  await Promise.all(
    slots.map((s) => {
      clearTimeout(s.timer);
      const w = s.worker;
      return new Promise<void>((done) => {
        if (!w || w.isDead()) return done();
        w.once('exit', () => done());
        w.process.kill('SIGTERM');
      });
    }),
  );
  down?.();
  logger.flush();
  return code;
}
