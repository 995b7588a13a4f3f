// Owns the `sluice` command line: parses arguments and delegates to the server, config and storage modules.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, formatHostPort } from '../config/keys.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { effectiveValues, renderReference, renderToml } from '../config/render.js';
import { checkTlsFiles } from '../mta/smtp/tls.js';
import { rotateSigningKey } from '../mta/webhooks/signing.js';
import { createDnsResolver } from '../mta/delivery/dns-resolver.js';
import { createMetricRollup } from '../storage/sqlite/metrics.js';
import { createTrackingDomainStore } from '../storage/sqlite/tracking-domains.js';
import { createAccountStore, type AccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../storage/sqlite/database.js';
import { backup, restore } from './backup.js';
import { createLockdownAllowStore } from '../storage/sqlite/lockdown-allow.js';
import { createQuarantineStore } from '../storage/sqlite/quarantine.js';
import { createQueueStore } from '../storage/sqlite/queue.js';
import { createWebhookStore } from '../storage/sqlite/webhooks.js';
import { accountsCommand, keysCommand, lockdownCommand, passwordsCommand } from './cli-accounts.js';
import { UsageError, type CliIo } from './cli-common.js';
import { consoleCommand } from './cli-console.js';
import { commandHelp, HELP } from './cli-help.js';
import { quarantineCommand, queueRelay } from './cli-quarantine.js';
import { monitorsCommand, scanPolicyCommand, sendersCommand } from './cli-abuse.js';
import { createSenderAbuseStore } from '../storage/sqlite/sender-abuse.js';
import { createAlertStore } from '../storage/sqlite/alerts.js';
import { queueCommand } from './cli-queue.js';
import { metricsCommand, trackingDomainsCommand } from './cli-engagement.js';
import { serve } from './cli-serve.js';
import { runningServes } from './pid-registry.js';
import { parseRoles, type Role } from './server.js';
import { VERSION } from './version.js';
import { secretSetting } from './wiring.js';

export type { CliIo } from './cli-common.js';
export { HELP } from './cli-help.js';


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
  label: { type: 'string' },
  sender: { type: 'string' },
  policy: { type: 'string' },
  condition: { type: 'string' },
  interval: { type: 'string' },
  webhook: { type: 'string' },
  email: { type: 'string' },
  only: { type: 'string' },
  hostname: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  campaign: { type: 'string' },
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
    switch (command) {
      case 'serve':
        return await serve(loaded(), loaded, io, now, opts.only === undefined ? undefined : roleList(opts.only));
      case 'reload':
        if (sub !== undefined) throw new UsageError('usage: sluice reload');
        return reloadCommand(loaded().config.dataDir, io);
      case 'config':
        return configCommand(sub, loaded, io, !!opts.json);
      case 'backup': {
        if (!sub || rest.length > 0) throw new UsageError('usage: sluice backup PATH');
        const target = path.resolve(io.cwd, sub);
        const manifest = await backup(loaded().config.dataDir, target);
        io.stdout(`backup written to ${target} (${manifest.files.length} files: ${manifest.files.map((f) => f.path).join(', ')})\n`);
        return 0;
      }
      case 'restore': {
        if (!sub || rest.length > 0) throw new UsageError('usage: sluice restore PATH');
        const { dataDir } = loaded().config;
        const manifest = restore(path.resolve(io.cwd, sub), dataDir);
        io.stdout(`restored ${manifest.files.length} files of the backup of ${manifest.created_at} into data_dir ${dataDir}; start sluice serve\n`);
        return 0;
      }
      case 'signing-key':
        return withStore(loaded(), (_, db) => signingKeyCommand(sub, db, !!opts.json, io, now));
      case 'accounts': {
        const cfg = loaded();
        if (sub === 'scan-policy') {
          return withStore(cfg, (store, db) => scanPolicyCommand(store, createSenderAbuseStore(db), cfg.config.filters.outboundPolicy, opts, io, now));
        }
        return withStore(cfg, (store) => accountsCommand(sub, store, opts, io, now));
      }
      case 'senders':
        return withStore(loaded(), (store, db) => sendersCommand(sub, rest, store, createSenderAbuseStore(db), opts, io, now));
      case 'monitors':
        return withStore(loaded(), (store, db) => monitorsCommand(sub, store, createAlertStore(db), opts, io, now));
      case 'keys':
        return withStore(loaded(), (store) => keysCommand(sub, store, opts, io, now));
      case 'smtp-passwords':
        return withStore(loaded(), (store) => passwordsCommand(sub, store, opts, io, now));
      case 'lockdown':
        return withStore(loaded(), (store, db) => lockdownCommand(sub, store, createLockdownAllowStore(db), opts, io, now));
      case 'console':
        return withStore(loaded(), (_, db) => consoleCommand(sub, rest, db, opts, io, now));
      case 'queue':
        return withStore(loaded(), (_, db) => queueCommand(sub, rest, createQueueStore(db), opts, io, now));
      case 'tracking-domains': {
        const { config } = loaded();
        const db = openDatabase(config.dataDir);
        try {
          const accounts = createAccountStore(db);
          const store = createTrackingDomainStore(db);
          const verifyDeps = () => ({
            store,
            resolver: createDnsResolver({ servers: config.dns.servers }),
            secret: secretSetting(accounts, 'tracking_secret'),
            publicUrl: () => config.http.publicUrl ?? `http://${formatHostPort(config.http.listen)}`,
            now,
          });
          return await trackingDomainsCommand(sub, accounts, store, verifyDeps, opts, io);
        } finally {
          db.close();
        }
      }
      case 'metrics':
        return withStore(loaded(), (store, db) => metricsCommand(sub, rest, store, createMetricRollup(db), opts, io, now));
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
    // What serve would trip over after a valid parse: the TLS files must exist, parse and match.
    checkTlsFiles(cfg.config);
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

/**
 * `sluice reload`: SIGHUP to every `sluice serve` on this data_dir (as `systemctl reload` does through ExecReload);
 * each logs what it applied. Exit 1 when none runs.
 */
function reloadCommand(dataDir: string, io: CliIo): number {
  const running = runningServes(dataDir);
  if (running.length === 0) throw new Error(`no sluice serve is running on data_dir ${dataDir}`);
  for (const p of running) {
    process.kill(p.pid, 'SIGHUP');
    io.stdout(`sent SIGHUP to sluice serve (pid ${p.pid}, roles ${p.roles.join(',')}); its log says what changed\n`);
  }
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
