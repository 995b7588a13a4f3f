// Owns the `sluice` commands other than serve (loaded only for them: a serving primary need not carry their modules).
import path from 'node:path';
import { formatHostPort } from '../config/keys.js';
import type { LoadedConfig } from '../config/load.js';
import { effectiveValues, renderReference, renderToml } from '../config/render.js';
import { checkTlsFiles } from '../mta/smtp/tls.js';
import { rotateSigningKey } from '../mta/webhooks/signing.js';
import { createDnsResolver } from '../mta/delivery/dns-resolver.js';
import { describeStore, openStore } from '../storage/open.js';
import type { Store } from '../storage/ports/store.js';
import { backup, postgresBackupAdvice, restore } from './backup.js';
import { createBayesClassifier } from '../filters/bayes.js';
import { filterCommand } from './cli-filter.js';
import { arcDnsRecord, arcKey, arcSealerFor } from './wiring-inbound.js';
import pino from 'pino';
import { accountsCommand, keysCommand, lockdownCommand, passwordsCommand, setPoolCommand } from './cli-accounts.js';
import { UsageError, type CliIo, type CliOptionValues } from './cli-common.js';
import { consoleCommand } from './cli-console.js';
import { inboundDomainsCommand, inboundRecipientsCommand } from './cli-inbound.js';
import { quarantineCommand, queueRelay } from './cli-quarantine.js';
import { monitorsCommand, scanPolicyCommand, sendersCommand } from './cli-abuse.js';
import { queueCommand } from './cli-queue.js';
import { logCommand } from './cli-log.js';
import { storeCommand } from './cli-store.js';
import { metricsCommand, trackingDomainsCommand } from './cli-engagement.js';
import { runningServes } from './pid-registry.js';
import { secretSetting } from '../storage/ports/settings.js';


/** Runs `command` (not serve, help or version); resolves to the exit code or throws as runCli expects. */
export async function runCommand(
  command: string,
  sub: string | undefined,
  rest: string[],
  opts: CliOptionValues,
  loaded: () => LoadedConfig,
  io: CliIo,
  now: () => number,
): Promise<number> {
  switch (command) {
    case 'reload':
      if (sub !== undefined) throw new UsageError('usage: sluice reload');
      return reloadCommand(loaded().config.dataDir, io);
    case 'config':
      return await configCommand(sub, loaded, io, !!opts.json);
    case 'backup': {
      if (!sub || rest.length > 0) throw new UsageError('usage: sluice backup PATH');
      const target = path.resolve(io.cwd, sub);
      const { config } = loaded();
      if (config.storage.backend === 'postgres') throw new Error(postgresBackupAdvice(config.storage.postgresUrl as string, target));
      const manifest = await backup(config.dataDir, target);
      io.stdout(`backup written to ${target} (${manifest.files.length} files: ${manifest.files.map((f) => f.path).join(', ')})\n`);
      return 0;
    }
    case 'restore': {
      if (!sub || rest.length > 0) throw new UsageError('usage: sluice restore PATH');
      const { dataDir, storage } = loaded().config;
      // An SQLite backup restored under a node that reads PostgreSQL would be written and never read.
      if (storage.backend === 'postgres') {
        throw new Error('storage.backend = postgres: sluice restore writes an SQLite data_dir this node would not read; restore a pg_dump with pg_restore (sluice backup prints the command), or restore this backup with storage.backend = sqlite and move it with sluice store copy');
      }
      const manifest = restore(path.resolve(io.cwd, sub), dataDir);
      io.stdout(`restored ${manifest.files.length} files of the backup of ${manifest.created_at} into data_dir ${dataDir}; start sluice serve\n`);
      return 0;
    }
    case 'store':
      return await storeCommand(sub, rest, opts.to, () => loaded().config.dataDir, io);
    case 'signing-key':
      return await withStore(loaded(), now, (store) => signingKeyCommand(sub, store, !!opts.json, io, now));
    case 'accounts': {
      const cfg = loaded();
      if (sub === 'set-pool') return await withStore(cfg, now, (store) => setPoolCommand(store.accounts, cfg.config.outbound.pools, opts, io));
      if (sub === 'scan-policy') {
        return await withStore(cfg, now, (store) => scanPolicyCommand(store.accounts, store.senderAbuse, cfg.config.filters.outboundPolicy, opts, io, now));
      }
      return await withStore(cfg, now, (store) => accountsCommand(sub, store.accounts, opts, io, now));
    }
    case 'senders':
      return await withStore(loaded(), now, (store) => sendersCommand(sub, rest, store.accounts, store.senderAbuse, opts, io, now));
    case 'monitors':
      return await withStore(loaded(), now, (store) => monitorsCommand(sub, store.accounts, store.alerts, opts, io, now));
    case 'keys':
      return await withStore(loaded(), now, (store) => keysCommand(sub, store.accounts, opts, io, now));
    case 'smtp-passwords':
      return await withStore(loaded(), now, (store) => passwordsCommand(sub, store.accounts, opts, io, now));
    case 'inbound-domains':
      return await withStore(loaded(), now, (store) => inboundDomainsCommand(sub, store.accounts, store.inboundDomains, opts, io, now));
    case 'inbound-recipients':
      return await withStore(loaded(), now, (store) => inboundRecipientsCommand(sub, store.accounts, store.inboundDomains, store.inboundRecipients, opts, io));
    case 'lockdown':
      return await withStore(loaded(), now, (store) => lockdownCommand(sub, store.accounts, store.lockdown, opts, io, now));
    case 'console':
      return await withStore(loaded(), now, (store) => consoleCommand(sub, rest, store.console, opts, io, now));
    case 'queue':
      return await withStore(loaded(), now, (store) => queueCommand(sub, rest, store, opts, io, now));
    case 'tracking-domains': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => {
        const secret = await secretSetting(store.settings, 'tracking_secret');
        const verifyDeps = () => ({
          store: store.trackingDomains,
          resolver: createDnsResolver({ servers: config.dns.servers, cacheMaxEntries: config.dns.cacheMaxEntries }),
          secret,
          publicUrl: () => config.http.publicUrl ?? `http://${formatHostPort(config.http.listen)}`,
          now,
        });
        return trackingDomainsCommand(sub, store.accounts, store.trackingDomains, verifyDeps, opts, io);
      });
    }
    case 'log':
      if (sub !== undefined) throw new UsageError(`sluice log takes options only, not "${sub}"`);
      return await withStore(loaded(), now, (store) => logCommand(store, opts, io, now));
    case 'metrics':
      return await withStore(loaded(), now, (store) => metricsCommand(sub, rest, store.accounts, store.metrics, opts, io, now));
    case 'quarantine': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => {
        const relay = io.relayInbound?.(store) ?? queueRelay(store, config.smtp.hostname, now, await arcSealerFor(config, store.settings, pino({ level: 'silent' })));
        const bayes = createBayesClassifier({ store: store.bayes, minLearned: config.filters.bayes.minLearned, maxTokens: config.filters.bayes.maxTokens });
        return quarantineCommand(sub, rest, store.accounts, store.quarantine, relay, bayes, opts, io, now);
      });
    }
    case 'arc': {
      if (sub !== 'record') throw new UsageError('usage: sluice arc record');
      const cfg = loaded();
      if (!cfg.config.inbound.arc.domain) throw new Error('ARC sealing is off: set inbound.arc.domain (and optionally inbound.arc.selector, inbound.arc.key)');
      return await withStore(cfg, now, async (store) => {
        const r = arcDnsRecord((await arcKey(cfg.config, store.settings))!);
        io.stdout(opts.json ? JSON.stringify(r) + '\n' : `${r.name}. IN TXT "${r.value}"\n`);
        return 0;
      });
    }
    case 'filter': {
      const { config } = loaded();
      return await withStore({ config }, now, (store) => {
        const bayes = { store: store.bayes, minLearned: config.filters.bayes.minLearned, maxTokens: config.filters.bayes.maxTokens };
        return filterCommand(sub, opts, store.accounts, bayes, io, now);
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** Runs `fn` on the configuration's store (storage/open.ts), closed once `fn` settles. */
async function withStore<T>(loaded: Pick<LoadedConfig, 'config'>, now: () => number, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(loaded.config, { now });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function configCommand(sub: string | undefined, loaded: () => LoadedConfig, io: CliIo, json: boolean): Promise<number> {
  if (sub === 'reference') {
    io.stdout(renderReference());
    return 0;
  }
  const cfg = loaded();
  if (sub === 'check') {
    // What serve would trip over after a valid parse: the TLS files must exist, parse and match.
    checkTlsFiles(cfg.config);
    // And the store it names: PostgreSQL reachable, its version and schema's (the file's path for SQLite).
    const store = await describeStore(cfg.config);
    io.stdout(`configuration is valid${cfg.file ? ` (${cfg.file})` : ' (defaults and environment)'}\n${store}\n`);
    return 0;
  }
  if (sub === 'print') {
    io.stdout(json ? JSON.stringify(effectiveValues(cfg.values), null, 2) + '\n' : renderToml(cfg.values));
    return 0;
  }
  throw new UsageError('usage: sluice config check|print|reference');
}

/** `sluice signing-key rotate`: a new current webhook signing key; a running server signs with it from its next POST. */
async function signingKeyCommand(sub: string | undefined, store: Store, json: boolean, io: CliIo, now: () => number): Promise<number> {
  if (sub !== 'rotate') throw new UsageError('usage: sluice signing-key rotate');
  const key = await rotateSigningKey(store.webhooks, now());
  const previous = (await store.webhooks.listKeys()).filter((k) => k.key_id !== key.key_id).map((k) => k.key_id);
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

