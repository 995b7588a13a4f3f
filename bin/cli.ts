// Owns the `sluice` command line: parses arguments, help and errors; serve (bin/cli-serve.ts) and the other commands
// (bin/cli-commands.ts) are loaded only when run, so `sluice version` and `sluice help` load neither.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, ConfigErrors } from '../config/key-def.js';
import type { LoadedConfig } from '../config/load.js';
import { UsageError, type CliIo } from './cli-common.js';
import { commandHelp, HELP } from './cli-help.js';
import { checkCommand, parseCommandLine } from './cli-usage.js';
import { parseRoles, ROLES, type Role } from './roles.js';
import { VERSION } from './version.js';

export type { CliIo } from './cli-common.js';
export { HELP } from './cli-help.js';

/**
 * The commands that may create data_dir: the first start, a restore into a new one and the first account. The
 * others refuse a data_dir that holds no Sluice data (run from the wrong directory they would otherwise make an
 * empty one and report on it), except those that read no data (config) or say so in their own words (store copy,
 * backup). Say the same in HELP's "Global options".
 */
const CREATES_DATA = new Set(['serve', 'restore', 'accounts create']);
const OWN_DATA_CHECK = new Set(['config', 'store', 'backup']);

/** Runs one CLI invocation; resolves to the process exit code (0 ok, 1 failure, 2 usage or config error). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const now = io.now ?? Date.now;
  try {
    const { values: opts, positionals, given } = parseCommandLine(argv);
    const [command, sub, ...rest] = positionals;
    if (opts.version) {
      // Given with a command it would be ignored: refused.
      if (command !== undefined || opts.help) throw new UsageError('-V/--version stands alone: sluice --version');
      io.stdout(`${VERSION}\n`);
      return 0;
    }
    // --to names the target of a copy: given to any other command it would be ignored, so it is refused.
    if (opts.to !== undefined && command !== 'store') throw new UsageError('--to is an option of sluice store copy only');
    checkCommand(positionals, given);
    if (opts.help || command === undefined || command === 'help') {
      // `sluice queue retry --help` and `sluice help queue retry`: that command's own text; otherwise all of them.
      const words = command === 'help' ? [sub, ...rest] : [command, sub];
      io.stdout(commandHelp(words.filter((w): w is string => w !== undefined)) ?? HELP);
      return 0;
    }
    if (command === 'version') {
      if (sub !== undefined) throw new UsageError('usage: sluice version');
      io.stdout(`${VERSION}\n`);
      return 0;
    }
    const { loadConfig } = await import('../config/load.js');
    const load = () => loadConfig({ file: opts.config, env: io.env, cwd: io.cwd, dataDir: opts['data-dir'] });
    if (command === 'serve') {
      const config = load();
      const roles = opts.only === undefined ? undefined : roleList(opts.only);
      const processes = config.config.server.processes;
      // Every busy or forbidden address named at once, before anything starts (a child of several processes: its
      // primary probed them).
      if (processes === 1 || (await import('node:cluster')).default.isPrimary) {
        const { plannedListeners, probeListeners } = await import('./listen-error.js');
        await probeListeners(plannedListeners(config.config, roles ?? ROLES), processes > 1);
      }
      // Imported here: the primary of several processes (it serves nothing) loads neither the serving code nor
      // pino and prom-client, only what supervises its children (issue 32: the tree's memory).
      if (config.config.server.processes > 1 && (await import('node:cluster')).default.isPrimary) {
        return await (await import('./serve-primary.js')).servePrimary(config, io, now, roles);
      }
      return await (await import('./cli-serve.js')).serve(config, load, io, now, roles);
    }
    // One load for the whole command (serve re-reads on SIGHUP; nothing else does).
    let cached: LoadedConfig | undefined;
    const loaded = () => (cached ??= load());
    if (!CREATES_DATA.has(`${command} ${sub}`) && !CREATES_DATA.has(command) && !OWN_DATA_CHECK.has(command)) await requireData(loaded());
    return await (await import('./cli-commands.js')).runCommand(command, sub, rest, opts, loaded, io, now);
  } catch (err) {
    if (err instanceof ConfigError) {
      // One line naming each key; a TOML error's code frame (smol-toml's) follows, indented.
      for (const e of err instanceof ConfigErrors ? err.errors : [err]) {
        const frame = e.detail ? e.detail.split('\n').map((l) => `  ${l}\n`).join('') : '';
        io.stderr(`sluice: configuration error: ${e.message}\n${frame}`);
      }
      return 2;
    }
    if (err instanceof UsageError) {
      io.stderr(`sluice: ${err.message}\nRun 'sluice help' for usage.\n`);
      return 2;
    }
    io.stderr(`sluice: ${(err as Error).message}\n`);
    return 1;
  }
}

/**
 * A data_dir without the embedded store's file holds no Sluice data (PostgreSQL keeps it elsewhere: nothing to look
 * for here): a configuration error naming the directory and the ways to name the right one.
 */
async function requireData({ config }: LoadedConfig): Promise<void> {
  if (config.storage.backend === 'postgres') return;
  const file = (await import('../storage/open.js')).storeFileName();
  if (fs.existsSync(path.join(config.dataDir, file))) return;
  throw new ConfigError(
    `data_dir ${config.dataDir}`,
    `holds no Sluice data (no ${file}): run sluice where its sluice.toml is, or name it with --config FILE or --data-dir DIR (sluice serve, restore and accounts create make a new one)`,
  );
}

/** `--only` as roles; a bad list is a usage error (exit 2). */
function roleList(text: string): Role[] {
  try {
    return parseRoles(text);
  } catch (err) {
    throw new UsageError(`--only: ${(err as Error).message}`);
  }
}
