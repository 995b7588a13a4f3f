// Owns wiring the inbound filters that hold state or talk to the network: the classifier's models, the DNS lists
// with their cache, greylisting's memory, clamd for inbound mail (bin/wiring.ts hands them to the pipeline), and
// the ARC key and sealer of relayed mail.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createBayesClassifier } from '../filters/bayes.js';
import type { CpuPool } from '../mta/cpu-pool.js';
import type { DnsResolver } from '../mta/delivery/dns-resolver.js';
import { createArcSealer, type ArcSealer } from '../mta/inbound/arc-seal.js';
import { createDnsListChecker } from '../mta/inbound/dnsbl.js';
import { createGreylister } from '../mta/inbound/greylist.js';
import { createClamdClient } from '../mta/scanners/clamd-client.js';
import type { SettingStore } from '../storage/ports/settings.js';
import type { Store } from '../storage/ports/store.js';

/** A matcher for CIDR networks (`inbound.greylist.exempt_networks`), IPv4 also as v4-mapped IPv6. */
export function networkMatcher(networks: readonly string[]): (ip: string) => boolean {
  const list = new net.BlockList();
  for (const n of networks) {
    const [addr, bits] = n.split('/') as [string, string];
    list.addSubnet(addr, Number(bits), net.isIP(addr) === 6 ? 'ipv6' : 'ipv4');
  }
  return (ip) => {
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
    const a = v4 ?? ip;
    return net.isIP(a) !== 0 && list.check(a, net.isIP(a) === 6 ? 'ipv6' : 'ipv4');
  };
}

/** The stateful inbound filters over `db` and `resolver` for `config`. */
export function wireInboundFilters(opts: {
  config: Config;
  store: Pick<Store, 'bayes' | 'greylist' | 'inboundLog'>;
  resolver: DnsResolver;
  now: () => number;
  logger: Logger;
  /** Tokenises large messages off the event loop (the CPU pool); absent: on it. */
  cpu?: Pick<CpuPool, 'tokenize'>;
}) {
  const { config, store, now } = opts;
  const f = config.filters;
  const g = config.inbound.greylist;
  return {
    // The classifier reads its models from the database at every message: a learn by the CLI, the API or another
    // process counts for the next message everywhere (no restart, no cache).
    bayes: createBayesClassifier({
      store: store.bayes,
      minLearned: f.bayes.minLearned,
      maxTokens: f.bayes.maxTokens,
      ...(opts.cpu ? { tokenize: (raw: Buffer) => opts.cpu!.tokenize(raw) } : {}),
    }),
    dnsLists: createDnsListChecker({
      resolver: opts.resolver,
      clientSites: f.dnsbl.sites,
      domainSites: f.dnsbl.domainSites,
      maxEntries: f.dnsbl.cacheMaxEntries,
      now,
    }),
    dnsblThreshold: f.dnsbl.threshold,
    // Always wired: rspamd's `greylist` action uses the same memory even when no domain greylists on its own.
    greylist: createGreylister({
      store: store.greylist,
      domains: g.domains,
      exemptNetworks: networkMatcher(g.exemptNetworks),
      settings: {
        delayMs: g.delaySeconds * 1000,
        retryWindowMs: g.retryWindowHours * 3_600_000,
        passMs: g.passDays * 86_400_000,
        autoAllowAfter: g.autoAllowAfter,
        newPerNetworkHour: g.newTripletsPerNetworkHour,
      },
      now,
      logger: opts.logger,
    }),
    clamd: f.clamd.address ? createClamdClient({ address: f.clamd.address, timeoutMs: f.clamd.timeoutMs }) : undefined,
    // Where the pipeline writes the rows of mail it refuses or defers (the tracking center's; issue 37).
    inboundLog: store.inboundLog,
  };
}

/** The setting that holds the generated ARC key of `selector` at `domain` (storage/ports/settings.ts). */
export const arcKeySetting = (selector: string, domain: string) => `arc-key:${selector}.${domain}`;

/**
 * The ARC key of `inbound.arc.*`: `inbound.arc.key` when set (the operator's file: every node reads its own copy),
 * else a key kept in the store's settings, shared by every process and node on it (issue 33: a node's data_dir holds
 * nothing another node needs; nodes sealing with keys of their own under one selector would fail verification). It
 * is made once per store, atomically: the key an older Sluice generated into data_dir/arc/<selector>.<domain>.pem when
 * that file is there (the one already published in DNS), else a new RSA-2048 key. Undefined when ARC sealing is off
 * (no `inbound.arc.domain`).
 */
export async function arcKey(
  config: Config,
  settings: SettingStore,
): Promise<{ domain: string; selector: string; privateKeyPem: string; publicKeyBase64: string } | undefined> {
  const { domain, selector, key } = config.inbound.arc;
  if (!domain) return undefined;
  const pem = key
    ? fs.readFileSync(key, 'utf8')
    : await settings.getOrCreate(arcKeySetting(selector, domain), () => {
        const file = path.join(config.dataDir, 'arc', `${selector}.${domain}.pem`);
        if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8');
        return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
      });
  const publicKeyBase64 = (crypto.createPublicKey(pem).export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');
  return { domain, selector, privateKeyPem: pem, publicKeyBase64 };
}

/** The sealer for relayed mail, or undefined when `inbound.arc.domain` is unset. */
export async function arcSealerFor(config: Config, settings: SettingStore, logger: Logger): Promise<ArcSealer | undefined> {
  const k = await arcKey(config, settings);
  return k ? createArcSealer({ ...k, logger }) : undefined;
}

/** The DNS record to publish for the ARC key (`sluice arc record`): RFC 6376 §3.6.1 key record, as DKIM's. */
export function arcDnsRecord(k: { domain: string; selector: string; privateKeyPem: string; publicKeyBase64: string }): { name: string; type: 'TXT'; value: string } {
  const ed = crypto.createPrivateKey(k.privateKeyPem).asymmetricKeyType === 'ed25519';
  // Ed25519 (RFC 8463 §4.2): p= is the raw 32-byte key, the last 32 bytes of its SPKI DER.
  const p = ed ? Buffer.from(k.publicKeyBase64, 'base64').subarray(-32).toString('base64') : k.publicKeyBase64;
  return { name: `${k.selector}._domainkey.${k.domain}`, type: 'TXT', value: `v=DKIM1; k=${ed ? 'ed25519' : 'rsa'}; p=${p}` };
}
