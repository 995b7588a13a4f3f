// Owns the `sluice` command line: parses arguments and delegates to the server, config and storage modules.
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ConfigError } from '../config/keys.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { effectiveValues, renderReference, renderToml } from '../config/render.js';
import { createAccountStore, type AccountStore, type KeyScope } from '../storage/accounts.js';
import { createQueueStore, type QueueStore } from '../storage/queue.js';
import { createLockdownAllowStore, type LockdownAllowStore } from '../storage/lockdown-allow.js';
import { domainToASCII } from 'node:url';
import { backupDatabase, openDatabase, type Db } from '../storage/database.js';
import { createQuarantineStore, quarantineStatus, type QuarantineStore } from '../storage/quarantine.js';
import type { InboundRelay } from '../mta/inbound/pipeline.js';
import { releaseQuarantined } from '../mta/inbound/quarantine-release.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createQueue } from '../mta/queue/queue.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import { createSmtpLogStore } from '../storage/smtp-log.js';
import { createSuppressionStore } from '../storage/suppressions.js';
import { createWebhookStore } from '../storage/webhooks.js';
import { rotateSigningKey } from '../mta/webhooks/signing.js';
import { HANDLE_PATTERN } from '../control-api/schemas.js';
import { startServer } from './server.js';
import { VERSION } from './version.js';
import { formatHostPort } from '../config/keys.js';

/** Where the CLI writes and what it reads; tests pass their own. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  now?: () => number;
  /** For `serve`: resolves when the process should stop (defaults to SIGINT/SIGTERM). */
  stopSignal?: Promise<void>;
  /** For `quarantine release`: the queue-backed inbound relay over this database (tests pass a recorder). */
  relayInbound?: (db: Db) => InboundRelay;
}

export const HELP = `sluice ${VERSION} — self-hosted mail service (inbound filtering MTA, outbound delivery, MailChannels-compatible API)

Usage: sluice <command> [options]

Commands:
  serve                                   start every listener (HTTP API, MX, submission)
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

class UsageError extends Error {}

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
        return await serve(loaded(), io, now);
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

function requireAccount(store: AccountStore, handle: string | undefined) {
  if (!handle) throw new UsageError('--account H is required');
  const account = store.findByHandle(handle);
  if (!account) throw new Error(`no account "${handle}"`);
  return account;
}

function requireId(raw: string | undefined): number {
  const id = Number(raw);
  if (!raw || !Number.isInteger(id) || id < 1) throw new UsageError('--id N (a positive integer) is required');
  return id;
}

type Opts = {
  domain?: string;
  handle?: string;
  company?: string;
  account?: string;
  scope?: string;
  id?: string;
  json?: boolean;
  limit?: string;
  all?: boolean;
};

function lockdownCommand(
  sub: string | undefined,
  store: AccountStore,
  allow: LockdownAllowStore,
  opts: Opts,
  io: CliIo,
  now: () => number,
): number {
  const account = requireAccount(store, opts.account);
  if (sub === 'list') {
    const rows = allow.list(account.id).map((r) => ({ domain: r.domain, created_at: iso(r.created_at) }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : rows.map((r) => `${r.domain}\n`).join(''));
    return 0;
  }
  if (sub !== 'allow' && sub !== 'deny') throw new UsageError('usage: sluice lockdown allow|deny|list');
  const domain = domainToASCII((opts.domain ?? '').trim().toLowerCase().replace(/\.$/, ''));
  if (!domain) throw new UsageError('--domain D (a domain name) is required');
  if (sub === 'allow') {
    allow.allow(account.id, domain, now());
    io.stdout(`${domain} may send for ${account.handle}\n`);
  } else {
    if (!allow.deny(account.id, domain)) throw new Error(`${domain} was not allowed for ${account.handle}`);
    io.stdout(`${domain} no longer allowed for ${account.handle} (DNS authorization still applies)\n`);
  }
  return 0;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function queueCommand(sub: string | undefined, rest: string[], store: QueueStore, opts: Opts, io: CliIo, now: () => number): number {
  const idArg = () => requireId(rest[0] ?? opts.id);
  if (sub === 'list') {
    const limit = opts.limit === undefined ? 100 : Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
    const rows = store.listPending(limit, 0).map((d) => ({
      id: d.id,
      state: d.state,
      rcpt: d.rcpt,
      sender: d.mail_from,
      message_id: d.header_message_id,
      attempts: d.attempts,
      next_attempt_at: iso(d.next_attempt_at),
      last_response: d.last_response,
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : rows
            .map((r) => `${r.id}\t${r.state}\t${r.next_attempt_at}\t${r.attempts}\t<${r.sender}> -> <${r.rcpt}>\t${r.last_response ?? ''}\n`)
            .join('') || 'queue is empty\n',
    );
    return 0;
  }
  if (sub === 'show') {
    const delivery = store.findDelivery(idArg());
    if (!delivery) throw new Error(`no delivery ${rest[0] ?? opts.id}`);
    const message = store.findMessage(delivery.message_id);
    const out = {
      delivery: { ...delivery, next_attempt_at: iso(delivery.next_attempt_at), updated_at: iso(delivery.updated_at) },
      message: message && {
        ...message,
        created_at: iso(message.created_at),
        expires_at: iso(message.expires_at),
        verdicts: message.verdicts === null ? null : JSON.parse(message.verdicts),
      },
      attempts: store.attemptsOf(delivery.id).map((a) => ({ ...a, at: iso(a.at) })),
    };
    io.stdout(JSON.stringify(out, null, opts.json ? 0 : 2) + '\n');
    return 0;
  }
  if (sub === 'retry') {
    const n = opts.all ? store.retryNow(null, now()) : store.retryNow(idArg(), now());
    if (!opts.all && n === 0) throw new Error(`delivery ${rest[0] ?? opts.id} is not queued`);
    io.stdout(`${n} deliver${n === 1 ? 'y' : 'ies'} due now\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    if (!store.dropDelivery(id, 'deleted by operator', now())) throw new Error(`delivery ${id} is not queued or held`);
    io.stdout(`dropped delivery ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice queue list|show|retry|delete');
}

/**
 * The inbound relay over this database: a release is committed to the durable queue, and the running server's
 * worker delivers it to the domain's downstreams on its next pass (at most 30 s later).
 */
function queueRelay(db: Db, hostname: string, now: () => number): InboundRelay {
  const queue = createQueue({
    store: createQueueStore(db),
    smtpLog: createSmtpLogStore(db),
    suppressions: createSuppressionStore(db),
    handleOf: () => '',
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
  });
  return createInboundRelay({ queue, hostname });
}

async function quarantineCommand(
  sub: string | undefined,
  rest: string[],
  accounts: AccountStore,
  store: QuarantineStore,
  relay: InboundRelay,
  opts: Opts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const idArg = () => requireId(rest[0] ?? opts.id);
  if (sub === 'list') {
    const limit = opts.limit === undefined ? 100 : Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a positive integer');
    const account = opts.account === undefined ? null : requireAccount(accounts, opts.account).id;
    const domain = opts.domain === undefined ? undefined : domainToASCII(opts.domain.trim().toLowerCase().replace(/\.$/, ''));
    const page = store.list({ accountId: account, domain, limit, offset: 0 }, now());
    const rows = page.rows.map((r) => ({
      id: r.id,
      status: quarantineStatus(r, now(), store.leaseMs),
      domain: r.domain,
      sender: r.mail_from,
      rcpt_to: JSON.parse(r.rcpt_to) as string[],
      subject: r.subject,
      score: r.score,
      created_at: iso(r.created_at),
      expires_at: iso(r.expires_at),
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : rows
            .map((r) => `${r.id}\t${r.status}\t${r.created_at}\t${r.score}\t<${r.sender}> -> ${r.rcpt_to.map((x) => `<${x}>`).join(',')}\t${r.subject ?? ''}\n`)
            .join('') || 'quarantine is empty\n',
    );
    return 0;
  }
  if (sub === 'release') {
    const id = idArg();
    const res = await releaseQuarantined({ store, relay, now }, null, id);
    if (!res.ok) {
      const why = {
        'not-found': `no quarantined message ${id}`,
        released: `quarantined message ${id} was already released`,
        'in-progress': `quarantined message ${id} is being released`,
        'domain-gone': `the domain of quarantined message ${id} is no longer provisioned`,
        'relay-failed': `quarantined message ${id} could not be queued for relay; it stays held`,
      }[res.reason];
      throw new Error(why);
    }
    io.stdout(`released quarantined message ${id} to ${(JSON.parse(res.row.rcpt_to) as string[]).join(', ')}\n`);
    return 0;
  }
  if (sub === 'delete') {
    const id = idArg();
    if (!store.find(null, id)) throw new Error(`no quarantined message ${id}`);
    if (!store.delete(null, id, now())) throw new Error(`quarantined message ${id} is being released`);
    io.stdout(`deleted quarantined message ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice quarantine list|release|delete');
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

function accountsCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): number {
  if (sub === 'create') {
    const handle = opts.handle ?? `acct${Math.random().toString(36).slice(2, 10)}`;
    if (!new RegExp(HANDLE_PATTERN).test(handle)) throw new UsageError('--handle must be 3-128 lower-case letters or digits');
    if (opts.company !== undefined && (opts.company.length < 3 || opts.company.length > 128)) {
      throw new UsageError('--company must be 3-128 characters');
    }
    const res = store.createParentWithKey({ handle, companyName: opts.company ?? null, now: now() });
    if (!res.ok) throw new Error(`handle "${handle}" already exists`);
    io.stdout(
      opts.json
        ? JSON.stringify({ handle, api_key: res.apiKey }) + '\n'
        : `created account ${handle}\nAPI key (scope api, shown once): ${res.apiKey}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = store.listParents().map((a) => ({
      handle: a.handle,
      company_name: a.company_name,
      enabled: a.enabled === 1,
      created_at: new Date(a.created_at).toISOString(),
    }));
    io.stdout(
      opts.json
        ? JSON.stringify(rows) + '\n'
        : rows.map((r) => `${r.handle}\t${r.company_name ?? ''}\t${r.enabled ? 'enabled' : 'suspended'}\t${r.created_at}\n`).join(''),
    );
    return 0;
  }
  throw new UsageError('usage: sluice accounts create|list');
}

function keysCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): number {
  const account = requireAccount(store, opts.account);
  if (sub === 'create') {
    if (opts.scope !== 'api' && opts.scope !== 'inbound') throw new UsageError('--scope api|inbound is required');
    const res = store.createApiKey(account.id, opts.scope as KeyScope, now());
    if (!res.ok) throw new Error(`account "${account.handle}" already has the maximum of 100 API keys`);
    io.stdout(
      opts.json
        ? JSON.stringify({ id: res.value.id, key: res.value.key, scope: opts.scope }) + '\n'
        : `API key ${res.value.id} (scope ${opts.scope}, shown once): ${res.value.key}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = store.listApiKeys(account.id).map((k) => ({ id: k.id, key: k.redacted, scope: k.scope }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : rows.map((r) => `${r.id}\t${r.scope}\t${r.key}\n`).join(''));
    return 0;
  }
  if (sub === 'revoke') {
    const id = requireId(opts.id);
    if (!store.revokeApiKey(account.id, id, now())) throw new Error(`no live API key ${id} on account "${account.handle}"`);
    io.stdout(`revoked API key ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice keys create|list|revoke');
}

function passwordsCommand(sub: string | undefined, store: AccountStore, opts: Opts, io: CliIo, now: () => number): number {
  const account = requireAccount(store, opts.account);
  if (sub === 'create') {
    const res = store.createSmtpPassword(account.id, now());
    if (!res.ok) throw new Error(`account "${account.handle}" already has the maximum of 100 SMTP passwords`);
    io.stdout(
      opts.json
        ? JSON.stringify({ id: res.value.id, smtp_password: res.value.password, username: account.handle }) + '\n'
        : `SMTP password ${res.value.id} for user ${account.handle} (shown once): ${res.value.password}\n`,
    );
    return 0;
  }
  if (sub === 'list') {
    const rows = store
      .listSmtpPasswords(account.id)
      .map((p) => ({ id: p.id, smtp_password: p.redacted, enabled: p.enabled === 1 }));
    io.stdout(opts.json ? JSON.stringify(rows) + '\n' : rows.map((r) => `${r.id}\t${r.smtp_password}\n`).join(''));
    return 0;
  }
  if (sub === 'delete') {
    const id = requireId(opts.id);
    if (!store.deleteSmtpPassword(account.id, id, now())) throw new Error(`no SMTP password ${id} on account "${account.handle}"`);
    io.stdout(`deleted SMTP password ${id}\n`);
    return 0;
  }
  throw new UsageError('usage: sluice smtp-passwords create|list|delete');
}

async function serve(loaded: LoadedConfig, io: CliIo, now: () => number): Promise<number> {
  const { config } = loaded;
  const logger = pino({ level: config.log.level, base: { pid: process.pid } });
  const server = await startServer({ config, logger, now });
  if (server.firstApiKey) {
    // Shown exactly once, on the first start with an empty data_dir, so the quick start needs no other step.
    logger.info({ handle: 'default', api_key: server.firstApiKey }, 'created account "default"; this API key is shown only once');
  }
  logger.info(
    {
      http: formatHostPort(server.http),
      mx: formatHostPort(server.mx),
      submission: formatHostPort(server.submission),
      ...(server.submissionTls ? { submission_tls: formatHostPort(server.submissionTls) } : {}),
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
  await stop;
  logger.info('shutting down');
  await server.close();
  logger.flush();
  return 0;
}
