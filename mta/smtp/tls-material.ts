// Owns where the TLS material Sluice makes itself lives: files in data_dir on SQLite (one machine, every process
// reads the same directory), the store's settings on PostgreSQL (every node reads the same rows, so a node's data_dir
// holds nothing another node needs), and the pending ACME HTTP-01 tokens (the store on both, so whichever process or
// node the CA's request reaches answers it).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/load.js';
import type { SettingStore } from '../../storage/ports/settings.js';
import { ensurePrivateDir, writePrivateFile } from '../../storage/private-files.js';

/** A certificate chain and its private key, PEM. */
export interface PemPair {
  cert: string;
  key: string;
}

/**
 * The self-signed pair, ACME's account key and ACME's current pair. Values are secrets: implementations never log
 * them, and callers log only a certificate's fingerprint, names and expiry.
 */
export interface TlsMaterial {
  /** `data_dir` (files under it) or `store` (the settings of the shared database): for logs and error messages. */
  readonly where: 'data_dir' | 'store';
  /** The label an error gives ACME's certificate and key (a file's path, or the setting's name). */
  readonly acmeLabels: { cert: string; key: string };
  /** The label an error gives the self-signed pair. */
  readonly selfSignedLabels: { cert: string; key: string };
  /**
   * The self-signed pair; when there is none, `make()` makes one and it is kept — once per store, so nodes starting
   * together agree on one (the loser of the race reads the winner's). `made`: this call made the pair it returns.
   */
  selfSigned(make: () => Promise<PemPair>): Promise<{ pair: PemPair; made: boolean }>;
  /** ACME's current pair; undefined before the first issue. */
  acmePair(): Promise<PemPair | undefined>;
  /** Installs a new ACME pair: a reader sees the old pair or the new one (a mismatch is refused by the reader). */
  installAcmePair(pair: PemPair): Promise<void>;
  /** The ACME account key (RFC 8555 §7.3: the account is bound to it), made by `make()` and kept on first use. */
  acmeAccountKey(make: () => Promise<string>): Promise<string>;
  /** A stamp of ACME's pair that changes whenever the pair does (the TLS source compares it at each check). */
  acmeStamp(): Promise<string>;
}

/** The self-signed pair's files in data_dir. */
export function selfSignedFiles(dataDir: string) {
  const dir = path.join(dataDir, 'tls');
  return { dir, cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
}

/** Where ACME keeps its state in data_dir (SQLite): the account key and the current certificate and key. */
export function acmeFiles(dataDir: string) {
  const dir = path.join(dataDir, 'acme');
  return { dir, accountKey: path.join(dir, 'account-key.pem'), cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
}

/** Writes `data` to `file` (0600) atomically (temp file + rename), so a reader sees the old or the new content. */
function writeAtomic(file: string, data: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writePrivateFile(tmp, data);
  fs.renameSync(tmp, file);
}

/** A stamp of files (inode, size, mtime; or missing): a change in any of them changes it. */
export function fileStamp(files: readonly string[]): string {
  return files
    .map((f) => {
      try {
        const st = fs.statSync(f);
        return `${f}:${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return `${f}:missing`;
      }
    })
    .join('|');
}

const readIf = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined);
const pairIf = (f: { cert: string; key: string }): PemPair | undefined => {
  const cert = readIf(f.cert);
  const key = readIf(f.key);
  return cert !== undefined && key !== undefined ? { cert, key } : undefined;
};

/** The material in files under `dataDir` (SQLite: data_dir/tls and data_dir/acme, 0600 in 0700 directories). */
export function fileTlsMaterial(dataDir: string): TlsMaterial {
  const self = selfSignedFiles(dataDir);
  const acme = acmeFiles(dataDir);
  return {
    where: 'data_dir',
    acmeLabels: { cert: `acme certificate ${acme.cert}`, key: `acme key ${acme.key}` },
    selfSignedLabels: { cert: `data_dir ${self.cert}`, key: `data_dir ${self.key}` },
    async selfSigned(make) {
      const have = pairIf(self);
      if (have) return { pair: have, made: false };
      const pair = await make();
      ensurePrivateDir(self.dir);
      writePrivateFile(self.key, pair.key);
      writePrivateFile(self.cert, pair.cert);
      return { pair, made: true };
    },
    acmePair: async () => pairIf(acme),
    async installAcmePair(pair) {
      ensurePrivateDir(acme.dir);
      // The key first: until the certificate follows, readers see a mismatched pair, refuse it and keep the old one.
      writeAtomic(acme.key, pair.key);
      writeAtomic(acme.cert, pair.cert);
    },
    async acmeAccountKey(make) {
      const have = readIf(acme.accountKey);
      if (have !== undefined) return have;
      const key = await make();
      ensurePrivateDir(acme.dir);
      writeAtomic(acme.accountKey, key);
      return key;
    },
    acmeStamp: async () => fileStamp([acme.cert, acme.key]),
  };
}

/** The settings the store keeps the material under (PostgreSQL). */
export const TLS_SETTINGS = { selfSigned: 'tls_self_signed_pair', acmePair: 'acme_pair', acmeAccountKey: 'acme_account_key' } as const;

const parsePair = (v: string | undefined): PemPair | undefined => (v === undefined ? undefined : (JSON.parse(v) as PemPair));

/**
 * The material in the store's settings (PostgreSQL: shared by every node). A pair is one setting (JSON), so a reader
 * never sees half of a renewal. A store with no material yet takes what `dataDir` holds (an install moved from
 * SQLite keeps its certificate and its ACME account) before anything is made anew.
 */
export function storeTlsMaterial(settings: SettingStore, dataDir: string): TlsMaterial {
  const self = selfSignedFiles(dataDir);
  const acme = acmeFiles(dataDir);
  // getOrCreate takes a value made beforehand: the pair is made (or read from data_dir) only when none is stored.
  async function once(name: string, make: () => Promise<string>): Promise<{ value: string; made: boolean }> {
    const have = await settings.get(name);
    if (have !== undefined) return { value: have, made: false };
    const fresh = await make();
    const value = await settings.getOrCreate(name, () => fresh);
    return { value, made: value === fresh };
  }
  return {
    where: 'store',
    acmeLabels: { cert: `acme certificate (setting ${TLS_SETTINGS.acmePair})`, key: `acme key (setting ${TLS_SETTINGS.acmePair})` },
    selfSignedLabels: { cert: `setting ${TLS_SETTINGS.selfSigned}`, key: `setting ${TLS_SETTINGS.selfSigned}` },
    async selfSigned(make) {
      let fromFiles = false;
      const { value, made } = await once(TLS_SETTINGS.selfSigned, async () => {
        const files = pairIf(self);
        fromFiles = files !== undefined;
        return JSON.stringify(files ?? (await make()));
      });
      return { pair: parsePair(value)!, made: made && !fromFiles };
    },
    async acmePair() {
      const stored = parsePair(await settings.get(TLS_SETTINGS.acmePair));
      if (stored) return stored;
      const files = pairIf(acme);
      return files && parsePair((await once(TLS_SETTINGS.acmePair, async () => JSON.stringify(files))).value);
    },
    installAcmePair: (pair) => settings.set(TLS_SETTINGS.acmePair, JSON.stringify({ cert: pair.cert, key: pair.key })),
    async acmeAccountKey(make) {
      return (await once(TLS_SETTINGS.acmeAccountKey, async () => readIf(acme.accountKey) ?? (await make()))).value;
    },
    async acmeStamp() {
      const v = await settings.get(TLS_SETTINGS.acmePair);
      return v === undefined ? 'none' : crypto.createHash('sha256').update(v).digest('hex');
    },
  };
}

/** The material for `config`: the store's on PostgreSQL (every node the same), data_dir's files on SQLite. */
export function tlsMaterialFor(config: Config, settings: SettingStore): TlsMaterial {
  return config.storage.backend === 'postgres' ? storeTlsMaterial(settings, config.dataDir) : fileTlsMaterial(config.dataDir);
}

/** Pending HTTP-01 tokens (RFC 8555 §8.3) in the store: token → key authorization, readable by every process. */
export interface AcmeChallengeStore {
  set(token: string, keyAuthorization: string): Promise<void>;
  get(token: string): Promise<string | undefined>;
  delete(token: string): Promise<void>;
}

/** Tokens are base64url (RFC 8555 §8.1); anything else is no token of ours and is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

/** The challenge tokens as settings `acme_challenge:<token>`. */
export function storeAcmeChallenges(settings: SettingStore): AcmeChallengeStore {
  const name = (token: string) => `acme_challenge:${token}`;
  return {
    set: (token, keyAuthorization) => settings.set(name(token), keyAuthorization),
    get: async (token) => (TOKEN.test(token) ? settings.get(name(token)) : undefined),
    delete: (token) => settings.delete(name(token)),
  };
}
