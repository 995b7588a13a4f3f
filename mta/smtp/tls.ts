// Owns the TLS certificate pair of the SMTP listeners and of HTTPS: which one applies (configured files, ACME's or a
// self-signed pair; the last two where tls-material.ts keeps them), reading and checking it, and noticing when it
// changes (on disk, or in the store another node renewed it in).
import crypto from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { ConfigError } from '../../config/keys.js';
import type { Config } from '../../config/load.js';
import { fileStamp, type PemPair, type TlsMaterial } from './tls-material.js';

export interface TlsPair {
  cert: string;
  key: string;
  /** Where the pair came from, for the start-up log (`stored`: a self-signed pair made before, in data_dir or the store). */
  source: 'config' | 'generated' | 'data_dir' | 'stored' | 'acme';
}

/** What the log says about a certificate. */
export interface CertInfo {
  /** SHA-256 fingerprint, colon-separated hex (as openssl prints it). */
  fingerprint: string;
  /** DNS names of the subjectAltName. */
  names: string[];
  notAfter: number;
}

/** One line for a file that cannot be read: the cause in words and its errno code. */
function fileProblem(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ENOENT':
      return 'no such file (ENOENT)';
    case 'EACCES':
      return 'permission denied (EACCES): it must be readable by the user Sluice runs as';
    case 'EISDIR':
      return 'is a directory (EISDIR)';
    default:
      return `${err.message}${err.code ? ` (${err.code})` : ''}`;
  }
}

/** Parses a PEM certificate (the first of a chain) for the log. */
export function certInfo(pem: string): CertInfo {
  const x = new crypto.X509Certificate(pem);
  const names = (x.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  return { fingerprint: x.fingerprint256, names, notAfter: Date.parse(x.validTo) };
}

/**
 * Reads and checks a certificate chain and its private key, each error naming its key and path
 * (`smtp.tls.cert /etc/x.pem: no such file (ENOENT)`): both files readable, then checkTlsPair.
 */
export function readTlsFiles(
  certFile: string,
  keyFile: string,
  source: TlsPair['source'],
  names: { cert: string; key: string } = { cert: 'smtp.tls.cert', key: 'smtp.tls.key' },
): TlsPair {
  const read = (name: string, file: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`${name} ${file}`, fileProblem(err as NodeJS.ErrnoException));
    }
  };
  return checkTlsPair(read(names.cert, certFile), read(names.key, keyFile), source, { cert: `${names.cert} ${certFile}`, key: `${names.key} ${keyFile}` });
}

/**
 * Checks a certificate chain and its private key, each error naming the label of where it came from: the
 * certificate PEM, the key a PEM private key that belongs to it, and Node able to build a TLS context from them.
 */
export function checkTlsPair(cert: string, key: string, source: TlsPair['source'], labels: { cert: string; key: string }): TlsPair {
  let x509: crypto.X509Certificate;
  try {
    x509 = new crypto.X509Certificate(cert);
  } catch (err) {
    throw new ConfigError(labels.cert, `not a PEM certificate: ${(err as Error).message}`);
  }
  let privateKey: crypto.KeyObject;
  try {
    privateKey = crypto.createPrivateKey(key);
  } catch (err) {
    throw new ConfigError(labels.key, `not a PEM private key: ${(err as Error).message}`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new ConfigError(labels.key, `does not belong to the certificate in ${labels.cert}`);
  }
  try {
    tls.createSecureContext({ cert, key });
  } catch (err) {
    throw new ConfigError(labels.cert, `unusable for TLS: ${(err as Error).message}`);
  }
  return { cert, key, source };
}

/**
 * Which listeners a pair is for: `smtp` (MX and submission), or `http` (HTTPS on http.listen), which takes
 * http.tls.cert/key when set and otherwise exactly what the SMTP listeners present.
 */
export type TlsPurpose = 'smtp' | 'http';

/** The certificate files configured for `purpose`, with the key names errors cite; undefined when none are. */
function configuredFiles(config: Config, purpose: TlsPurpose): { cert: string; key: string; names: { cert: string; key: string } } | undefined {
  const own = purpose === 'http' ? config.http.tls : undefined;
  if (own?.cert !== undefined && own.key !== undefined) return { cert: own.cert, key: own.key, names: { cert: 'http.tls.cert', key: 'http.tls.key' } };
  const { cert, key } = config.smtp.tls;
  return cert !== undefined && key !== undefined ? { cert, key, names: { cert: 'smtp.tls.cert', key: 'smtp.tls.key' } } : undefined;
}

/** `sluice config check`: the configured certificate files (SMTP's, and HTTPS's when on) exist, parse and match. */
export function checkTlsFiles(config: Config): void {
  const purposes: TlsPurpose[] = config.http.tls.enabled ? ['smtp', 'http'] : ['smtp'];
  for (const purpose of purposes) {
    const f = configuredFiles(config, purpose);
    if (f) readTlsFiles(f.cert, f.key, 'config', f.names);
  }
}

/** A new self-signed pair for smtp.hostname (10 years: nothing verifies it; it serves until a real one is set). */
async function makeSelfSigned(config: Config): Promise<PemPair> {
  // Imported here: selfsigned brings @peculiar/x509 and its ASN.1 stack (~20 MB of RSS in each serving process,
  // issue 32), used once per data_dir or store; every later start reads the kept pair.
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: config.smtp.hostname }], {
    keySize: 2048,
    notAfterDate: new Date(Date.now() + 3650 * 86_400_000),
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: config.smtp.hostname }] }],
  });
  return { cert: pems.cert, key: pems.private };
}

/**
 * The pair that applies under `config` for `purpose`: the configured files when set (http.tls.cert/key for HTTPS,
 * then smtp.tls.cert/key); else ACME's when it has issued one; else the self-signed pair, made on first use and kept
 * (`material`: data_dir's files on SQLite, the store on PostgreSQL).
 */
export async function loadTlsPair(config: Config, material: TlsMaterial, purpose: TlsPurpose = 'smtp'): Promise<TlsPair> {
  const files = configuredFiles(config, purpose);
  if (files) return readTlsFiles(files.cert, files.key, 'config', files.names);
  const acme = config.acme.directoryUrl === undefined ? undefined : await material.acmePair();
  if (acme) return checkTlsPair(acme.cert, acme.key, 'acme', material.acmeLabels);
  const { pair, made } = await material.selfSigned(() => makeSelfSigned(config));
  return checkTlsPair(pair.cert, pair.key, made ? 'generated' : material.where === 'data_dir' ? 'data_dir' : 'stored', material.selfSignedLabels);
}

/** A stamp of where a pair was read from: the configured files' stat, or ACME's stamp; a change means "read again". */
async function stampOf(config: Config, material: TlsMaterial, purpose: TlsPurpose): Promise<string> {
  const configured = configuredFiles(config, purpose);
  if (!configured) return config.acme.directoryUrl === undefined ? '' : `acme:${await material.acmeStamp()}`;
  return fileStamp([configured.cert, configured.key]);
}

export interface TlsSource {
  /** The pair the listeners present now. */
  current(): TlsPair;
  /**
   * Reads the pair again if its files (or, after a reload, the configuration naming them) changed; on a change the
   * listeners get it for every new TLS session (open sessions keep theirs). A pair that fails its checks is not
   * taken: the old one stays, and the error is logged and returned.
   */
  refresh(): Promise<{ changed: boolean; error?: string }>;
  /** Called with each new pair. */
  onChange(fn: (pair: TlsPair) => void): void;
  /** Checks every `intervalMs` (certbot renewals; ACME certificates of other processes, or other nodes'). */
  start(intervalMs?: number): void;
  stop(): void;
}

/** How often the certificate files (or ACME's pair in the store) are checked for a change. */
export const TLS_CHECK_MS = 60_000;

/**
 * Creates the TLS source of `purpose`'s listeners over the live configuration (`config()` is read again on each
 * refresh). HTTPS has a source of its own even when it presents the SMTP pair, so that setting http.tls.cert on a
 * reload takes effect like smtp.tls.cert does.
 */
export async function createTlsSource(config: () => Config, material: TlsMaterial, logger: Logger, purpose: TlsPurpose = 'smtp'): Promise<TlsSource> {
  const log = logger.child({ component: 'tls', ...(purpose === 'http' ? { listener: 'https' } : {}) });
  let stamp = await stampOf(config(), material, purpose);
  let pair = await loadTlsPair(config(), material, purpose);
  const listeners: ((p: TlsPair) => void)[] = [];
  let timer: NodeJS.Timeout | undefined;
  let refreshing: Promise<{ changed: boolean; error?: string }> | undefined;

  const describe = (p: TlsPair) => {
    const info = certInfo(p.cert);
    return { source: p.source, names: info.names, fingerprint: info.fingerprint, not_after: new Date(info.notAfter).toISOString() };
  };
  if (pair.source === 'generated') log.info({ where: material.where, ...describe(pair) }, 'generated self-signed certificate');

  async function refresh(): Promise<{ changed: boolean; error?: string }> {
    let next: string;
    let fresh: TlsPair;
    try {
      next = await stampOf(config(), material, purpose);
      if (next === stamp) return { changed: false };
      fresh = await loadTlsPair(config(), material, purpose);
    } catch (err) {
      // Keep serving the old pair; a half-written renewal (or a store out of reach) is read again at the next check.
      log.error({ err: (err as Error).message }, 'new certificate not taken; keeping the current one');
      return { changed: false, error: (err as Error).message };
    }
    stamp = next;
    if (fresh.cert === pair.cert && fresh.key === pair.key) return { changed: false };
    pair = fresh;
    for (const fn of listeners) fn(pair);
    log.info(describe(pair), 'certificate reloaded');
    return { changed: true };
  }

  // One refresh at a time: a timer tick and a SIGHUP arriving together read the files once.
  const once = () => (refreshing ??= refresh().finally(() => (refreshing = undefined)));
  return {
    current: () => pair,
    refresh: once,
    onChange: (fn) => void listeners.push(fn),
    start(intervalMs = TLS_CHECK_MS) {
      timer = setInterval(() => void once(), intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
