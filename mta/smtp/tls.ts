// Owns the TLS certificate pair used by the SMTP listeners: the configured files, or a self-signed pair in data_dir.
import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import type { Config } from '../../config/load.js';

export interface TlsPair {
  cert: string;
  key: string;
  /** Where the pair came from, for the start-up log. */
  source: 'config' | 'generated' | 'data_dir';
}

/**
 * Reads smtp.tls.cert/key when configured; otherwise loads data_dir/tls/{cert,key}.pem, generating a self-signed
 * pair for smtp.hostname on first use (written 0600, so a restart keeps the same certificate).
 */
export async function loadTlsPair(config: Config): Promise<TlsPair> {
  if (config.smtp.tls.cert && config.smtp.tls.key) {
    return {
      cert: fs.readFileSync(config.smtp.tls.cert, 'utf8'),
      key: fs.readFileSync(config.smtp.tls.key, 'utf8'),
      source: 'config',
    };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) {
    return { cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8'), source: 'data_dir' };
  }
  const pems = await generate([{ name: 'commonName', value: config.smtp.hostname }], {
    keySize: 2048,
    notAfterDate: new Date(Date.now() + 3650 * 86_400_000),
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: config.smtp.hostname }] }],
  });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(keyFile, pems.private, { mode: 0o600 });
  fs.writeFileSync(certFile, pems.cert, { mode: 0o644 });
  return { cert: pems.cert, key: pems.private, source: 'generated' };
}
