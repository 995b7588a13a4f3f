// Owns ACME (RFC 8555) certificates: the account key and the certificate for smtp.hostname and acme.hostnames (kept
// where mta/smtp/tls-material.ts says: data_dir/acme on SQLite, the store on PostgreSQL), issued and renewed 30 days
// before expiry with HTTP-01 answered by any HTTP listener on the store.
import fs from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import * as acme from 'acme-client';
import type { Logger } from 'pino';
import type { Config } from '../../config/load.js';
import { certInfo } from '../smtp/tls.js';
import type { AcmeChallengeStore, TlsMaterial } from '../smtp/tls-material.js';

/** Renew this long before notAfter (Let's Encrypt's advice for 90-day certificates: a third of the lifetime). */
export const RENEW_BEFORE_MS = 30 * 86_400_000;
/** How often the certificate is checked; a failed order is tried again at the next check. */
export const ACME_CHECK_MS = 3_600_000;

/**
 * HTTP-01 tokens being validated (RFC 8555 §8.3): token → key authorization. The control plane answers
 * `GET /.well-known/acme-challenge/<token>` from it; the tokens are in the store, so the process (or node) the
 * CA's request reaches answers it, whichever one ordered.
 */
export interface AcmeChallenges {
  get(token: string): Promise<string | undefined>;
}

export type AcmeOutcome = { action: 'issued' | 'renewed'; names: string[]; notAfter: number } | { action: 'valid'; notAfter: number };

export interface AcmeManager {
  challenges: AcmeChallenges;
  /** Checks the certificate and orders a new one when it is missing, lacks a name, or expires within 30 days. */
  runOnce(): Promise<AcmeOutcome>;
  /** Checks now and then every hour; errors are logged, never thrown. */
  start(): void;
  stop(): Promise<void>;
}

export interface AcmeDeps {
  config: Config;
  logger: Logger;
  /** Injected clock: decides when the certificate is due for renewal. */
  now: () => number;
  /** Called once a new pair is installed (the TLS source reads it again). */
  installed: () => Promise<unknown>;
  /** Where the account key and the pair are kept (tls-material.ts). */
  material: TlsMaterial;
  /** The pending HTTP-01 tokens, shared by every process and node on the store. */
  challenges: AcmeChallengeStore;
}

/** The names the certificate must carry: smtp.hostname first (the subject), then acme.hostnames. */
export function acmeNames(config: Config): string[] {
  return [...new Set([config.smtp.hostname.toLowerCase(), ...config.acme.hostnames])];
}

/**
 * Trusts `caFile` for requests to the directory's origin only (acme-client shares one axios instance; other
 * origins keep the system CAs).
 */
function trustCa(directoryUrl: string, caFile: string | undefined): void {
  if (caFile === undefined) return;
  const origin = new URL(directoryUrl).origin;
  const agent = new https.Agent({ ca: [...tls.rootCertificates, fs.readFileSync(caFile, 'utf8')], keepAlive: false });
  acme.axios.interceptors.request.use((req) => {
    if (req.url && new URL(req.url).origin === origin) req.httpsAgent = agent;
    return req;
  });
}

/** What is installed now: the certificate's names and expiry, or undefined when there is none (or it is unreadable). */
async function installed(material: TlsMaterial): Promise<{ names: string[]; notAfter: number } | undefined> {
  const pair = await material.acmePair();
  if (!pair) return undefined;
  try {
    return certInfo(pair.cert);
  } catch {
    return undefined;
  }
}

export function createAcmeManager(deps: AcmeDeps): AcmeManager {
  const { config, now } = deps;
  const directoryUrl = config.acme.directoryUrl;
  if (directoryUrl === undefined) throw new Error('ACME needs acme.directory_url');
  const log = deps.logger.child({ component: 'acme' });
  const { material, challenges } = deps;
  trustCa(directoryUrl, config.acme.caFile);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<AcmeOutcome> | undefined;

  /**
   * One order with acme-client's own flow (RFC 8555 §7.4): account (§7.3, found again by its key), order for the
   * names, one HTTP-01 challenge per authorization (§8.3; the CA fetches the token from our HTTP listener), finalize
   * with a CSR made by acme-client over an RSA 2048 key (the key type every SMTP client accepts), download the chain.
   * acme-client's own check that the token is reachable is skipped: it would dial port 80 of each name from here,
   * which says nothing about what the CA sees (behind NAT, a redirect, or a test CA on another port).
   */
  async function order(names: string[]): Promise<{ cert: string; key: string }> {
    // The account key (ECDSA P-256, made on first use and kept): the ACME account is bound to it.
    const accountKey = await material.acmeAccountKey(async () => (await acme.crypto.createPrivateEcdsaKey()).toString());
    const client = new acme.Client({ directoryUrl: directoryUrl!, accountKey });
    const key = await acme.crypto.createPrivateRsaKey(2048);
    const [, csr] = await acme.crypto.createCsr({ commonName: names[0]!, altNames: names }, key);
    // Find the account this key registered before (RFC 8555 §7.3.1 onlyReturnExisting; then a POST-as-GET), so
    // auto() does not register again: its registration of an existing account sends an update that carries no
    // change when acme.email is unset, which a CA may refuse (pebble: "use POST-as-GET instead of an empty update").
    // A new key has no account yet: auto() registers it.
    await client.createAccount({ onlyReturnExisting: true }).catch(() => undefined);
    const cert = await client.auto({
      csr,
      ...(config.acme.email ? { email: config.acme.email } : {}),
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        if (challenge.type !== 'http-01') throw new Error(`the CA offers no http-01 challenge (got ${challenge.type})`);
        await challenges.set(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        await challenges.delete(challenge.token);
      },
    });
    return { cert, key: key.toString() };
  }

  async function check(): Promise<AcmeOutcome> {
    const names = acmeNames(config);
    const have = await installed(material);
    const missing = have ? names.filter((n) => !have.names.includes(n)) : names;
    if (have && missing.length === 0 && have.notAfter - now() > RENEW_BEFORE_MS) return { action: 'valid', notAfter: have.notAfter };
    const why = !have ? 'no certificate yet' : missing.length > 0 ? `missing ${missing.join(', ')}` : 'expires within 30 days';
    log.info({ names, directory: directoryUrl, reason: why }, `ordering a certificate for ${names.join(', ')} (${why})`);
    const pair = await order(names);
    const info = certInfo(pair.cert);
    await material.installAcmePair(pair);
    log.info(
      { names: info.names, fingerprint: info.fingerprint, not_after: new Date(info.notAfter).toISOString() },
      `certificate ${have ? 'renewed' : 'issued'} for ${info.names.join(', ')}, valid until ${new Date(info.notAfter).toISOString()}`,
    );
    await deps.installed();
    return { action: have ? 'renewed' : 'issued', names: info.names, notAfter: info.notAfter };
  }

  // One order at a time: a timer tick during a slow order waits for it.
  const runOnce = () => (running ??= check().finally(() => (running = undefined)));
  const tick = () =>
    void runOnce().catch((err: unknown) =>
      log.error({ err: (err as Error).message, retry_in_s: ACME_CHECK_MS / 1000 }, `ACME order failed: ${(err as Error).message}; trying again in an hour`),
    );
  return {
    challenges: { get: (token) => challenges.get(token) },
    runOnce,
    start() {
      tick();
      timer = setInterval(tick, ACME_CHECK_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}

