// Owns `sluice serve` as a process: the logger, the start-up lines, signals and shutdown (the first key: first-key.ts).
import cluster from 'node:cluster';
import pino, { type Logger } from 'pino';
import { envName, formatHostPort, type HostPort } from '../config/keys.js';
import { TOKENIZER_VERSION } from '../filters/bayes-tokens.js';
import type { LoadedConfig } from '../config/load.js';
import type { CliIo } from './cli-common.js';
import { ROLES, type Role } from './roles.js';
import type { RunningServer } from './server.js';
import { createLogDestination } from './log-destination.js';
import { startBufferGovernor, type GcFunction } from './buffer-governor.js';
import { startIdleTrimmer } from './idle-trim.js';
import { missingNodeFlags, SERVE_NODE_FLAGS } from './node-flags.js';
import { registerServe } from './pid-registry.js';
import { stopSignal } from './serve-primary.js';
import { treeChild } from './tree-child.js';
import { CHILD_SLOT_ENV } from './tree-messages.js';
import { VERSION } from './version.js';

/** Which From domains may send, so the first start says why a send would be refused and how to allow one. */
async function logLockdown(server: RunningServer, mode: 'dns' | 'off', logger: Logger): Promise<void> {
  if (mode === 'off') {
    logger.info({ lockdown: 'off' }, 'domain lockdown is off: every account may send as any domain');
    return;
  }
  const allowed = await server.store.lockdown.listAll(100);
  const how = 'an account may send as a domain whose _sluice.<domain> TXT record names it ("v=sluice1 auth=<handle>")';
  if (Object.keys(allowed).length === 0) {
    logger.info(
      { lockdown: 'dns', operator_allowed: {} },
      `domain lockdown: ${how}; no domain is allowed by the operator yet (sluice lockdown allow --account default --domain <domain>)`,
    );
  } else {
    logger.info({ lockdown: 'dns', operator_allowed: allowed }, `domain lockdown: ${how}, and as the operator-allowed domains listed`);
  }
}

/**
 * Says at start when the global classifier model was learned with another tokeniser than this version's: it is not
 * used (every message's Bayes verdict abstains, reason `tokenizer-changed`) until trained again or learning anew.
 */
async function logOutdatedModel(server: RunningServer, logger: Logger): Promise<void> {
  const m = await server.store.bayes.stats(null);
  if (m.tokenizer === TOKENIZER_VERSION || m.learned.spam + m.learned.ham === 0) return;
  logger.warn(
    { model_tokenizer: m.tokenizer, tokenizer: TOKENIZER_VERSION, learned: m.learned },
    `the global classifier model was learned with tokeniser ${m.tokenizer}; this version's is ${TOKENIZER_VERSION}, so it is not used: train it again (sluice filter reset, then sluice filter train), or its next learn (autolearn, a release, a report) starts it again`,
  );
}

/** `what, what and what`, or `none`. */
const listed = (keys: string[]) => (keys.length === 0 ? 'none' : keys.join(', '));

/**
 * SIGHUP: reads the configuration again and applies it (server.reload), then says in one line what changed, what is
 * in effect and what needs a restart. A configuration that does not load is refused whole (an error line); the
 * running one stays. The line is written at the more verbose of the old and new log level, so it is never lost.
 */
async function reload(server: RunningServer, load: () => LoadedConfig, logger: Logger): Promise<void> {
  let next: LoadedConfig;
  try {
    next = load();
  } catch (err) {
    logger.error({ err: (err as Error).message }, `reload refused: ${(err as Error).message}; the running configuration stays`);
    return;
  }
  const r = await server.reload(next.config);
  const tlsText = { reloaded: 'certificate reloaded', unchanged: 'certificate unchanged', refused: `new certificate refused: ${r.tlsError}`, none: '' }[r.tls];
  const msg =
    (r.changed.length === 0 ? 'configuration reloaded: nothing changed' : `configuration reloaded: applied ${listed(r.applied)}; needs a restart: ${listed(r.needsRestart)}`) +
    (tlsText ? `; ${tlsText}` : '');
  const fields = { changed: r.changed, applied: r.applied, needs_restart: r.needsRestart, tls: r.tls };
  const level = server.currentConfig().log.level;
  const write = () => (r.tls === 'refused' ? logger.warn(fields, msg) : logger.info(fields, msg));
  if (logger.levels.values[level]! <= logger.levelVal) {
    logger.level = level;
    write();
  } else {
    write();
    logger.level = level;
  }
}

/**
 * Runs the server until SIGINT/SIGTERM (or `io.stopSignal`); SIGHUP reloads the configuration with `load`. Resolves
 * to the exit code. The primary of several processes runs bin/serve-primary.ts instead (bin/cli.ts chooses).
 */
export async function serve(loaded: LoadedConfig, load: () => LoadedConfig, io: CliIo, now: () => number, roles: Role[] | undefined): Promise<number> {
  const { config } = loaded;
  // Asynchronous stdout (sonic-boom, flushed at exit by pino): lines logged while a write is in flight go out in one
  // write instead of one blocking write(2) each on the event loop — per message the MX and the worker log lines
  // (issue 17). A kill -9 may lose the last lines in flight; the mail itself is in the queue.
  // A full disk under the log drops lines (counted) instead of stopping the process (bin/log-destination.ts).
  const logger = pino({ level: config.log.level, base: { pid: process.pid } }, createLogDestination(1).stream);
  const processes = config.server.processes;
  const slot = cluster.isWorker ? Number(process.env[CHILD_SLOT_ENV] ?? 0) : 0;
  // Imported here, not above: a primary of several processes serves nothing and need not carry the server's modules.
  const { startServer } = await import('./server.js');
  const server = await startServer({ config, logger, now, processes, onceJobs: slot === 0, ...(roles ? { roles } : {}) });
  const tree = treeChild(server.metricFamilies.registry);
  if (tree) server.metricFamilies.gatherFrom(tree.treeMetrics);
  const unregister = cluster.isWorker && process.env[CHILD_SLOT_ENV] !== undefined ? () => undefined : registerServe(config.dataDir, server.roles, now());
  // One reload at a time, in the order the signals came; the handler also keeps SIGHUP from killing the process.
  let reloading = Promise.resolve();
  const onHup = () => {
    reloading = reloading.then(() => reload(server, load, logger)).catch((err: unknown) => logger.error({ err }, 'reload failed'));
  };
  process.on('SIGHUP', onHup);
  if (server.roles.includes('api') || server.roles.includes('submission')) await logLockdown(server, config.outbound.lockdown, logger);
  if (server.roles.includes('mx')) await logOutdatedModel(server, logger);
  logger.info(
    {
      ...(server.http ? { http: formatHostPort(server.http) } : {}),
      ...(server.httpPlain ? { http_plain: formatHostPort(server.httpPlain) } : {}),
      ...(server.metrics ? { metrics: formatHostPort(server.metrics) } : {}),
      ...(server.mx ? { mx: formatHostPort(server.mx) } : {}),
      ...(server.submission ? { submission: formatHostPort(server.submission) } : {}),
      ...(server.submissionTls ? { submission_tls: formatHostPort(server.submissionTls) } : {}),
      ...(server.roles.length < ROLES.length ? { roles: server.roles.join(',') } : {}),
      version: VERSION,
    },
    'listening',
  );
  const missing = missingNodeFlags();
  if (missing.length > 0) {
    logger.warn({ missing, expected: SERVE_NODE_FLAGS }, 'node was started without the flags sluice serve runs with: a large message takes up to 4× its size in memory instead of under 2.5× (README: Room for messages)');
  }
  const gc = (globalThis as { gc?: GcFunction }).gc;
  const governor = startBufferGovernor({ gc, onScavenge: () => server.metricFamilies.bufferScavenges.inc() });
  const trimmer = startIdleTrimmer({ gc, onTrim: () => server.metricFamilies.idleCollections.inc() });
  // The other children bind what this one bound (port 0 resolved), through the env layer of their configuration.
  const bound: [string, HostPort | undefined][] = [
    ['http.listen', server.http], ['http.plain_listen', server.httpPlain], ['http.metrics_listen', server.metrics],
    ['smtp.mx.listen', server.mx], ['smtp.submission.listen', server.submission], ['smtp.submission.tls_listen', server.submissionTls],
  ];
  tree?.ready(Object.fromEntries(bound.filter(([, a]) => a).map(([k, a]) => [envName(k), formatHostPort(a!)])));
  // A child whose primary is gone (kill -9) drains and exits rather than serve on unsupervised.
  const stop = tree ? Promise.race([stopSignal(io), tree.orphaned]) : stopSignal(io);
  // A process with no listener (--only worker) has only unref'd timers: hold the event loop open until told to stop.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  await stop;
  clearInterval(keepAlive);
  governor?.stop();
  trimmer?.stop();
  process.off('SIGHUP', onHup);
  logger.info('shutting down');
  await reloading;
  await server.close();
  unregister();
  logger.flush();
  // The IPC channel to the primary would keep this child's event loop alive after everything else has closed.
  if (tree && process.connected) process.disconnect?.();
  return 0;
}
