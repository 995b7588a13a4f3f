// Owns the `sluice` command line: parses arguments, help and errors; serve (bin/cli-serve.ts) and the other commands
// (bin/cli-commands.ts) are loaded only when run.
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/keys.js';
import { loadConfig } from '../config/load.js';
import { OPTIONS, UsageError, type CliIo } from './cli-common.js';
import { commandHelp, HELP } from './cli-help.js';
import { parseRoles, type Role } from './roles.js';
import { VERSION } from './version.js';

export type { CliIo } from './cli-common.js';
export { HELP } from './cli-help.js';

/** Runs one CLI invocation; resolves to the process exit code (0 ok, 1 failure, 2 usage or config error). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    io.stderr(`sluice: ${(err as Error).message}\nRun 'sluice help' for usage.\n`);
    return 2;
  }
  const { values: opts, positionals } = parsed;
  const [command, sub, ...rest] = positionals;
  if (opts.help || command === undefined || command === 'help') {
    // `sluice queue retry --help` and `sluice help queue retry`: that command's own text; otherwise all of them.
    const words = command === 'help' ? [sub, ...rest] : [command, sub];
    io.stdout(commandHelp(words.filter((w): w is string => w !== undefined)) ?? HELP);
    return 0;
  }
  const now = io.now ?? Date.now;
  try {
    if (command === 'version') {
      io.stdout(`${VERSION}\n`);
      return 0;
    }
    const loaded = () => loadConfig({ file: opts.config, env: io.env, cwd: io.cwd });
    // --to names the target of a copy: given to any other command it would be ignored, so it is refused.
    if (opts.to !== undefined && command !== 'store') throw new UsageError('--to is an option of sluice store copy only');
    switch (command) {
      case 'serve': {
        const config = loaded();
        const roles = opts.only === undefined ? undefined : roleList(opts.only);
        // Imported here: the primary of several processes (it serves nothing) loads neither the serving code nor
        // pino and prom-client, only what supervises its children (issue 32: the tree's memory).
        if (config.config.server.processes > 1 && (await import('node:cluster')).default.isPrimary) {
          return await (await import('./serve-primary.js')).servePrimary(config, io, now, roles);
        }
        return await (await import('./cli-serve.js')).serve(config, loaded, io, now, roles);
      }
      default:
        return await (await import('./cli-commands.js')).runCommand(command, sub, rest, opts, loaded, io, now);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      // One line naming the key; a TOML error's code frame (smol-toml's) follows, indented.
      const frame = err.detail ? err.detail.split('\n').map((l) => `  ${l}\n`).join('') : '';
      io.stderr(`sluice: configuration error: ${err.message}\n${frame}`);
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

/** `--only` as roles; a bad list is a usage error (exit 2). */
function roleList(text: string): Role[] {
  try {
    return parseRoles(text);
  } catch (err) {
    throw new UsageError(`--only: ${(err as Error).message}`);
  }
}
