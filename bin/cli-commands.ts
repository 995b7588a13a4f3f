// Owns the `sluice` commands other than serve (loaded only for them: a serving primary need not carry their modules).
// Each command's module is imported when it runs: loading every one took `sluice queue list` from 0.15 s to 0.6 s.
import path from 'node:path';
import { formatHostPort } from '../config/keys.js';
import type { LoadedConfig } from '../config/load.js';
import { describeStore, openStore } from '../storage/open.js';
import type { Store } from '../storage/ports/store.js';
import { UsageError, type CliIo, type CliOptionValues } from './cli-common.js';
import { auditCommand, recordCli } from './cli-audit.js';
import { queueCommand } from './cli-queue.js';


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
  // Every command on the store passes here: one that changed something and succeeded is appended to the audit log
  // (bin/cli-audit.ts says which), in the same store before it closes.
  const withStore = <T>(l: Pick<LoadedConfig, 'config'>, n: () => number, fn: (store: Store) => Promise<T>) =>
    openWithStore(l, n, async (store) => {
      const exitCode = await fn(store);
      await recordCli(store, { command, sub, rest, opts, exitCode, env: io.env, now: n });
      return exitCode;
    });
  switch (command) {
    case 'reload':
      if (sub !== undefined) throw new UsageError('usage: sluice reload');
      return await reloadCommand(loaded().config.dataDir, io);
    case 'config':
      return await configCommand(sub, loaded, io, !!opts.json);
    case 'backup': {
      if (!sub || rest.length > 0) throw new UsageError('usage: sluice backup PATH');
      const target = path.resolve(io.cwd, sub);
      const { config } = loaded();
      if (config.storage.backend === 'postgres') throw new Error((await import('./backup.js')).postgresBackupAdvice(config.storage.postgresUrl as string, target));
      const manifest = await (await import('./backup.js')).backup(config.dataDir, target);
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
      const manifest = (await import('./backup.js')).restore(path.resolve(io.cwd, sub), dataDir);
      io.stdout(`restored ${manifest.files.length} files of the backup of ${manifest.created_at} into data_dir ${dataDir}; start sluice serve\n`);
      return 0;
    }
    case 'store':
      return await (await import('./cli-store.js')).storeCommand(sub, rest, opts.to, () => loaded().config.dataDir, io);
    case 'signing-key':
      return await withStore(loaded(), now, (store) => signingKeyCommand(sub, store, !!opts.json, io, now));
    case 'accounts': {
      const cfg = loaded();
      if (sub === 'set-pool') return await withStore(cfg, now, async (store) => (await import('./cli-accounts.js')).setPoolCommand(store.accounts, cfg.config.outbound.pools, opts, io));
      if (sub === 'scan-policy') {
        return await withStore(cfg, now, async (store) => (await import('./cli-abuse.js')).scanPolicyCommand(store.accounts, store.senderAbuse, cfg.config.filters.outboundPolicy, opts, io, now));
      }
      return await withStore(cfg, now, async (store) => (await import('./cli-accounts.js')).accountsCommand(sub, store.accounts, opts, io, now));
    }
    case 'senders':
      return await withStore(loaded(), now, async (store) => (await import('./cli-abuse.js')).sendersCommand(sub, rest, store.accounts, store.senderAbuse, opts, io, now));
    case 'monitors':
      return await withStore(loaded(), now, async (store) => (await import('./cli-abuse.js')).monitorsCommand(sub, store.accounts, store.alerts, opts, io, now));
    case 'keys':
      return await withStore(loaded(), now, async (store) => (await import('./cli-accounts.js')).keysCommand(sub, store.accounts, opts, io, now));
    case 'smtp-passwords':
      return await withStore(loaded(), now, async (store) => (await import('./cli-accounts.js')).passwordsCommand(sub, store.accounts, opts, io, now));
    case 'inbound-domains':
      return await withStore(loaded(), now, async (store) => (await import('./cli-inbound.js')).inboundDomainsCommand(sub, store.accounts, store.inboundDomains, opts, io, now));
    case 'inbound-recipients':
      return await withStore(loaded(), now, async (store) => (await import('./cli-inbound.js')).inboundRecipientsCommand(sub, store.accounts, store.inboundDomains, store.inboundRecipients, opts, io));
    case 'suppressions': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => (await import('./cli-suppressions.js')).suppressionsCommand(sub, rest, store, config.accounts.maxSuppressions, opts, io, now));
    }
    case 'lockdown':
      return await withStore(loaded(), now, async (store) => (await import('./cli-accounts.js')).lockdownCommand(sub, store.accounts, store.lockdown, opts, io, now));
    case 'console':
      return await withStore(loaded(), now, async (store) => (await import('./cli-console.js')).consoleCommand(sub, rest, store, opts, io, now));
    case 'audit':
      return await withStore(loaded(), now, (store) => auditCommand(sub, store, opts, io));
    case 'queue':
      return await withStore(loaded(), now, (store) => queueCommand(sub, rest, store, opts, io, now));
    case 'tracking-domains': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => {
        const secret = await (await import('../storage/ports/settings.js')).secretSetting(store.settings, 'tracking_secret');
        const { createDnsResolver } = await import('../mta/delivery/dns-resolver.js');
        const verifyDeps = () => ({
          store: store.trackingDomains,
          resolver: createDnsResolver({ servers: config.dns.servers, cacheMaxEntries: config.dns.cacheMaxEntries }),
          secret,
          publicUrl: () => config.http.publicUrl ?? `http://${formatHostPort(config.http.listen)}`,
          now,
        });
        return (await import('./cli-engagement.js')).trackingDomainsCommand(sub, store.accounts, store.trackingDomains, verifyDeps, opts, io);
      });
    }
    case 'log':
      if (sub !== undefined) throw new UsageError(`sluice log takes options only, not "${sub}"`);
      return await withStore(loaded(), now, async (store) => (await import('./cli-log.js')).logCommand(store, opts, io, now));
    case 'metrics':
      return await withStore(loaded(), now, async (store) => (await import('./cli-engagement.js')).metricsCommand(sub, rest, store.accounts, store.metrics, opts, io, now));
    case 'quarantine': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => {
        const { quarantineCommand, queueRelay } = await import('./cli-quarantine.js');
        const { arcSealerFor } = await import('./wiring-inbound.js');
        const { default: pino } = await import('pino');
        const relay = io.relayInbound?.(store) ?? queueRelay(store, config.smtp.hostname, now, await arcSealerFor(config, store.settings, pino({ level: 'silent' })));
        const bayes = (await import('../filters/bayes.js')).createBayesClassifier({ store: store.bayes, minLearned: config.filters.bayes.minLearned, maxTokens: config.filters.bayes.maxTokens });
        return quarantineCommand(sub, rest, store.accounts, store.quarantine, relay, bayes, opts, io, now);
      });
    }
    case 'arc': {
      if (sub !== 'record') throw new UsageError('usage: sluice arc record');
      const cfg = loaded();
      if (!cfg.config.inbound.arc.domain) throw new Error('ARC sealing is off: set inbound.arc.domain (and optionally inbound.arc.selector, inbound.arc.key)');
      return await withStore(cfg, now, async (store) => {
        const { arcDnsRecord, arcKey } = await import('./wiring-inbound.js');
        const r = arcDnsRecord((await arcKey(cfg.config, store.settings))!);
        io.stdout(opts.json ? JSON.stringify(r) + '\n' : `${r.name}. IN TXT "${r.value}"\n`);
        return 0;
      });
    }
    case 'filter': {
      const { config } = loaded();
      return await withStore({ config }, now, async (store) => {
        const bayes = { store: store.bayes, minLearned: config.filters.bayes.minLearned, maxTokens: config.filters.bayes.maxTokens };
        return (await import('./cli-filter.js')).filterCommand(sub, opts, store.accounts, bayes, io, now);
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** Runs `fn` on the configuration's store (storage/open.ts), closed once `fn` settles. */
async function openWithStore<T>(loaded: Pick<LoadedConfig, 'config'>, now: () => number, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(loaded.config, { now });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function configCommand(sub: string | undefined, loaded: () => LoadedConfig, io: CliIo, json: boolean): Promise<number> {
  const { effectiveValues, renderReference, renderToml } = await import('../config/render.js');
  if (sub === 'reference') {
    io.stdout(renderReference());
    return 0;
  }
  const cfg = loaded();
  if (sub === 'check') {
    // What serve would trip over after a valid parse: the TLS files must exist, parse and match.
    (await import('../mta/smtp/tls.js')).checkTlsFiles(cfg.config);
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
  const key = await (await import('../mta/webhooks/signing.js')).rotateSigningKey(store.webhooks, now());
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
async function reloadCommand(dataDir: string, io: CliIo): Promise<number> {
  const running = (await import('./pid-registry.js')).runningServes(dataDir);
  if (running.length === 0) throw new Error(`no sluice serve is running on data_dir ${dataDir}`);
  for (const p of running) {
    process.kill(p.pid, 'SIGHUP');
    io.stdout(`sent SIGHUP to sluice serve (pid ${p.pid}, roles ${p.roles.join(',')}); its log says what changed\n`);
  }
  return 0;
}

