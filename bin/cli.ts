// Owns the `sluice` command line: parses arguments and delegates to the server, config and storage modules.
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ConfigError, formatHostPort } from '../config/keys.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { effectiveValues, renderReference, renderToml } from '../config/render.js';
import { rotateSigningKey } from '../mta/webhooks/signing.js';
import { createAccountStore, type AccountStore } from '../storage/accounts.js';
import { backupDatabase, openDatabase, type Db } from '../storage/database.js';
import { createLockdownAllowStore } from '../storage/lockdown-allow.js';
import { createQuarantineStore } from '../storage/quarantine.js';
import { createQueueStore } from '../storage/queue.js';
import { createWebhookStore } from '../storage/webhooks.js';
import { accountsCommand, keysCommand, lockdownCommand, passwordsCommand } from './cli-accounts.js';
import { UsageError, type CliIo } from './cli-common.js';
import { quarantineCommand, queueRelay } from './cli-quarantine.js';
import { queueCommand } from './cli-queue.js';
import { parseRoles, ROLES, startServer, type Role } from './server.js';
import { VERSION } from './version.js';

export type { CliIo } from './cli-common.js';

export const HELP = `sluice ${VERSION} — self-hosted mail service (inbound filtering MTA, outbound delivery, MailChannels-compatible API)

Usage: sluice <command> [options]

Commands:
  serve [--only ROLES]                    start every listener (HTTP API, MX, submission) and the worker;
                                          --only api,mx,submission,worker runs just those roles (several
                                          processes may share one data_dir, e.g. an api and a worker)
  config check                            validate the configuration and exit (0 = valid)
  config print [--json]                   print the effective configuration, secrets redacted
  config reference                        print the table of every configuration key
  accounts create [--handle H] [--company NAME] [--json]
                                          create a parent account and its first API key (scope api)
  accounts list [--json]                  list parent accounts
  keys create --account H --scope api|inbound [--json]
                                          create an API key (shown once)
  keys list --account H [--json]          list an account's live API keys (redacted)
  keys revoke --account H --id N          revoke an API key
  smtp-passwords create --account H [--json]
                                          create an SMTP submission password (shown once)
  smtp-passwords list --account H [--json]
  smtp-passwords delete --account H --id N
  lockdown allow --account H --domain D  authorize a From domain for an account without a DNS record
  lockdown deny --account H --domain D   remove that authorization
  lockdown list --account H [--json]     domains the operator authorized for an account
  queue list [--json] [--limit N]         list undelivered deliveries (queued, sending, held)
  queue show ID [--json]                  one delivery with its message and every attempt
  queue retry ID | --all                  make a queued delivery (or every one) due now
  queue delete ID                         drop a queued or held delivery (it will not be sent)
  quarantine list [--account H] [--domain D] [--json] [--limit N]
                                          list quarantined inbound messages, newest first
  quarantine release ID                   relay a quarantined message to its recipients (once)
  quarantine delete ID                    delete a quarantined message (it will not be relayed)
  signing-key rotate [--json]             new current Ed25519 key for webhook signatures (old keys stay published)
  backup PATH                             write a consistent snapshot of the database to PATH (server may run)
  help                                    this text
  version                                 print the version

Global options:
  --config PATH    TOML configuration file (default: ./sluice.toml when present)
  -h, --help       this text

Every configuration key can also be set by an environment variable SLUICE_<KEY> (dots become underscores,
e.g. SLUICE_HTTP_LISTEN=127.0.0.1:0); see 'sluice config reference'.
`;

const OPTIONS = {
  config: { type: 'string' },
  json: { type: 'boolean' },
  handle: { type: 'string' },
  company: { type: 'string' },
  account: { type: 'string' },
  scope: { type: 'string' },
  id: { type: 'string' },
  limit: { type: 'string' },
  domain: { type: 'string' },
  all: { type: 'boolean' },
  only: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

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
    io.stdout(HELP);
    return 0;
  }
  const now = io.now ?? Date.now;
  try {
    if (command === 'version') {
      io.stdout(`${VERSION}\n`);
      return 0;
    }
    const loaded = () => loadConfig({ file: opts.config, env: io.env, cwd: io.cwd });
    switch (command) {
      case 'serve':
        return await serve(loaded(), io, now, opts.only === undefined ? undefined : roleList(opts.only));
      case 'config':
        return configCommand(sub, loaded, io, !!opts.json);
      case 'backup': {
        const target = sub;
        if (!target || rest.length > 0) throw new UsageError('usage: sluice backup PATH');
        withStore(loaded(), (_, db) => backupDatabase(db, target));
        io.stdout(`backup written to ${target}\n`);
        return 0;
      }
      case 'signing-key':
        return withStore(loaded(), (_, db) => signingKeyCommand(sub, db, !!opts.json, io, now));
      case 'accounts':
        return withStore(loaded(), (store) => accountsCommand(sub, store, opts, io, now));
      case 'keys':
        return withStore(loaded(), (store) => keysCommand(sub, store, opts, io, now));
      case 'smtp-passwords':
        return withStore(loaded(), (store) => passwordsCommand(sub, store, opts, io, now));
      case 'lockdown':
        return withStore(loaded(), (store, db) => lockdownCommand(sub, store, createLockdownAllowStore(db), opts, io, now));
      case 'queue':
        return withStore(loaded(), (_, db) => queueCommand(sub, rest, createQueueStore(db), opts, io, now));
      case 'quarantine': {
        const { config } = loaded();
        const db = openDatabase(config.dataDir);
        try {
          const relay = io.relayInbound?.(db) ?? queueRelay(db, config.smtp.hostname, now);
          return await quarantineCommand(sub, rest, createAccountStore(db), createQuarantineStore(db), relay, opts, io, now);
        } finally {
          db.close();
        }
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(`sluice: configuration error: ${err.message}\n`);
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

function withStore<T>(loaded: LoadedConfig, fn: (store: AccountStore, db: ReturnType<typeof openDatabase>) => T): T {
  const db = openDatabase(loaded.config.dataDir);
  try {
    return fn(createAccountStore(db), db);
  } finally {
    db.close();
  }
}

function configCommand(sub: string | undefined, loaded: () => LoadedConfig, io: CliIo, json: boolean): number {
  if (sub === 'reference') {
    io.stdout(renderReference());
    return 0;
  }
  const cfg = loaded();
  if (sub === 'check') {
    io.stdout(`configuration is valid${cfg.file ? ` (${cfg.file})` : ' (defaults and environment)'}\n`);
    return 0;
  }
  if (sub === 'print') {
    io.stdout(json ? JSON.stringify(effectiveValues(cfg.values), null, 2) + '\n' : renderToml(cfg.values));
    return 0;
  }
  throw new UsageError('usage: sluice config check|print|reference');
}

/** `sluice signing-key rotate`: a new current webhook signing key; a running server signs with it from its next POST. */
function signingKeyCommand(sub: string | undefined, db: Db, json: boolean, io: CliIo, now: () => number): number {
  if (sub !== 'rotate') throw new UsageError('usage: sluice signing-key rotate');
  const store = createWebhookStore(db);
  const key = rotateSigningKey(store, now());
  const previous = store.listKeys().filter((k) => k.key_id !== key.key_id).map((k) => k.key_id);
  io.stdout(
    json
      ? JSON.stringify({ id: key.key_id, key: key.public_key, previous }) + '\n'
      : `new webhook signing key ${key.key_id} is current; previous keys stay retrievable: ${previous.join(', ') || '(none)'}\n`,
  );
  return 0;
}

/** `--only` as roles; a bad list is a usage error (exit 2). */
function roleList(text: string): Role[] {
  try {
    return parseRoles(text);
  } catch (err) {
    throw new UsageError(`--only: ${(err as Error).message}`);
  }
}

async function serve(loaded: LoadedConfig, io: CliIo, now: () => number, roles: Role[] | undefined): Promise<number> {
  const { config } = loaded;
  // Asynchronous stdout (sonic-boom, flushed at exit by pino): lines logged while a write is in flight go out in one
  // write instead of one blocking write(2) each on the event loop — per message the MX and the worker log lines
  // (issue 17). A kill -9 may lose the last lines in flight; the mail itself is in the queue.
  const logger = pino({ level: config.log.level, base: { pid: process.pid } }, pino.destination({ dest: 1, sync: false }));
  const server = await startServer({ config, logger, now, ...(roles ? { roles } : {}) });
  if (server.firstApiKey) {
    // Shown exactly once, on the first start with an empty data_dir, so the quick start needs no other step.
    logger.info({ handle: 'default', api_key: server.firstApiKey }, 'created account "default"; this API key is shown only once');
  }
  logger.info(
    {
      ...(server.http ? { http: formatHostPort(server.http) } : {}),
      ...(server.mx ? { mx: formatHostPort(server.mx) } : {}),
      ...(server.submission ? { submission: formatHostPort(server.submission) } : {}),
      ...(server.submissionTls ? { submission_tls: formatHostPort(server.submissionTls) } : {}),
      ...(server.roles.length < ROLES.length ? { roles: server.roles.join(',') } : {}),
      version: VERSION,
    },
    'listening',
  );
  const stop =
    io.stopSignal ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
  // A process with no listener (--only worker) has only unref'd timers: hold the event loop open until told to stop.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  await stop;
  clearInterval(keepAlive);
  logger.info('shutting down');
  await server.close();
  logger.flush();
  return 0;
}
