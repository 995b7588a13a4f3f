// Owns the last error-level log lines of this process, for the console's overview: a ring of fixed size fed by the
// pino logger every part is wired with (a wrapper over it and its children), so nothing grows with the log.
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
import type { ErrorLine } from '../control-api/console/overview-facts.js';

/** Lines kept: the overview shows the latest; older ones are in the log itself. */
export const ERROR_RING_SIZE = 50;
/** Characters kept of a line's message and of its error's: a line of megabytes must not stay in memory. */
export const ERROR_TEXT_MAX = 500;

const cut = (s: string) => (s.length > ERROR_TEXT_MAX ? `${s.slice(0, ERROR_TEXT_MAX - 1)}…` : s);

export interface ErrorRing {
  push(line: ErrorLine): void;
  /** Newest first. */
  lines(): ErrorLine[];
}

export function createErrorRing(size = ERROR_RING_SIZE): ErrorRing {
  const ring: ErrorLine[] = [];
  let next = 0;
  return {
    push(line) {
      const kept = { ...line, msg: cut(line.msg), err: line.err === undefined ? undefined : cut(line.err) };
      if (ring.length < size) ring.push(kept);
      else ring[next] = kept;
      next = (next + 1) % size;
    },
    lines() {
      // From the newest (just before `next`) backwards.
      return ring.map((_, i) => ring[(next - 1 - i + ring.length * 2) % ring.length]!);
    },
  };
}

/** The message and error text of a pino call: (msg), (err, msg?), ({ err, … }, msg?). */
function parse(args: readonly unknown[]): { msg: string; err: string | undefined } {
  const [first, second] = args;
  if (typeof first === 'string') return { msg: first, err: undefined };
  const msg = typeof second === 'string' ? second : undefined;
  if (first instanceof Error) return { msg: msg ?? first.message, err: first.message };
  if (first !== null && typeof first === 'object') {
    const o = first as Record<string, unknown>;
    const e = o.err ?? o.error;
    const err = e instanceof Error ? e.message : typeof e === 'string' ? e : undefined;
    return { msg: msg ?? (typeof o.msg === 'string' ? o.msg : (err ?? '')), err };
  }
  return { msg: msg ?? String(first), err: undefined };
}

/**
 * `logger` with its `error` and `fatal` lines (those its level lets through) also kept in `ring`, and every child it
 * makes likewise; everything else is the logger itself.
 */
export function recordErrors(logger: Logger, ring: ErrorRing, now: () => number = Date.now): Logger {
  return new Proxy(logger, {
    get(target, prop) {
      if (prop === 'error' || prop === 'fatal') {
        return (...args: unknown[]) => {
          if (target.isLevelEnabled(prop)) {
            const component = (target.bindings() as Record<string, unknown>).component;
            ring.push({ at: now(), level: prop, component: typeof component === 'string' ? component : undefined, ...parse(args) });
          }
          return (target[prop] as (...a: unknown[]) => void)(...args);
        };
      }
      if (prop === 'child') {
        return (bindings: Bindings, options?: ChildLoggerOptions<never>) => recordErrors(target.child(bindings, options), ring, now);
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
    set: (target, prop, value) => Reflect.set(target, prop, value),
  });
}
