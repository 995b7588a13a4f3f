// Owns the primary of `sluice serve` when server.processes > 1: registers the tree and supervises its children
// (bin/supervisor.ts); it loads no server module, pino or prom-client, so it stays near a bare node's memory.
import type { LoadedConfig } from '../config/load.js';
import type { CliIo } from './cli-common.js';
import { registerServe } from './pid-registry.js';
import { createPrimaryLogger } from './primary-log.js';
import { ROLES, type Role } from './roles.js';
import { supervise } from './supervisor.js';

/**
 * Resolves on SIGINT/SIGTERM (or `io.stopSignal`). A handler that stays (not `once`): a child gets SIGTERM from its
 * primary and, under systemd or a terminal's ^C, the same signal again from outside; a second one must not kill it
 * mid-drain.
 */
export function stopSignal(io: CliIo): Promise<void> {
  return (
    io.stopSignal ??
    new Promise<void>((resolve) => {
      process.on('SIGINT', () => resolve());
      process.on('SIGTERM', () => resolve());
    })
  );
}

/** Runs the tree's primary until it is told to stop; resolves to the exit code. This one serves nothing itself. */
export async function servePrimary(loaded: LoadedConfig, io: CliIo, now: () => number, roles: Role[] | undefined): Promise<number> {
  const { config } = loaded;
  const processes = config.server.processes;
  const logger = createPrimaryLogger(config.log.level);
  // ACME's HTTP-01 tokens live in the memory of the child that runs ACME (child 0); the CA's request may reach another.
  if (config.acme.directoryUrl) logger.warn({ processes }, 'ACME HTTP-01 challenges are answered by one child only: with server.processes > 1 a certificate order may fail; set server.processes = 1 until it is issued');
  // The primary is what `sluice reload` signals (it passes SIGHUP on) and what `sluice restore` waits for, as
  // systemd's MAINPID: the registry names it, not its children (a child there would reload twice).
  // Registered at once (`sluice reload` may follow the first child's listening line); a data_dir it cannot use is
  // child 0's start-up error to report (one line, exit 2), so a failure here only defers the entry until the tree is up.
  const register = () => registerServe(config.dataDir, roles ?? ROLES, now());
  let early: (() => void) | undefined;
  try {
    early = register();
  } catch {
    early = undefined;
  }
  // The entry goes when the tree stops, whether or not it came up (removing it twice is harmless).
  return supervise({ processes, logger, stop: stopSignal(io), now, up: () => early ?? register() }).finally(() => early?.());
}
