// Owns the polling loop the outboxes share (webhook batches, alerts): one pass at a time, then one every interval.
export interface PassLoop<T> {
  /** Runs a pass now; concurrent calls share the pass in progress. */
  runOnce(): Promise<T>;
  /** Whether start() was called and stop() not yet. */
  readonly started: boolean;
  /** Runs a pass now and then `intervalMs` after each one ends, on an unref'd timer. */
  start(): void;
  /** Stops polling; waits for the pass in progress. */
  stop(): Promise<void>;
}

/** Creates the loop over `pass`; a pass that throws goes to `onError` and the loop goes on. */
export function createPassLoop<T>(pass: () => Promise<T>, opts: { intervalMs: number; onError: (err: unknown) => void }): PassLoop<T> {
  let running: Promise<T> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  const loop: PassLoop<T> = {
    runOnce() {
      if (running) return running;
      running = pass().finally(() => {
        running = undefined;
      });
      return running;
    },
    get started() {
      return started;
    },
    start() {
      if (started) return;
      started = true;
      tick();
    },
    async stop() {
      started = false;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
  function tick(): void {
    loop
      .runOnce()
      .catch(opts.onError)
      .finally(() => {
        if (started) {
          timer = setTimeout(tick, opts.intervalMs);
          timer.unref();
        }
      });
  }
  return loop;
}
