// Owns running Debian's pebble (an ACME test CA) on loopback for tests, and talking HTTPS to pebble and to Sluice
// with a chosen CA and server name.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import type { Test } from 'tap';
import { freePort } from './daemons.js';
import { tempDir } from './stack.js';

export const PEBBLE = '/usr/bin/pebble';
/** Why the pebble tests cannot run here, or false. */
export const pebbleMissing = !fs.existsSync(PEBBLE) && 'pebble is not installed (apt-get install pebble)';
/** The TLS fixtures (pebble's own listener pair among them). */
export const tlsFixture = (name: string) => path.resolve('test/fixtures/tls', name);

export interface Pebble {
  /** The ACME directory URL. */
  directory: string;
  /** Base URL of pebble's management API (`/roots/0` is the root that signs what it issues). */
  mgmt: string;
  output: string[];
  /** PEM of the root pebble issues under (fetched from the management API). */
  root(): Promise<string>;
}

/** The ACME keys of a stack ordering from pebble on `acmePort`, with a contact address unless `email` is false. */
export function acmeEnv(acmePort: number, opts: { email?: boolean } = {}): Record<string, string> {
  return {
    SLUICE_ACME_DIRECTORY_URL: `https://127.0.0.1:${acmePort}/dir`,
    ...(opts.email === false ? {} : { SLUICE_ACME_EMAIL: 'postmaster@sluice.test' }),
    SLUICE_ACME_CA_FILE: tlsFixture('pebble-cert.pem'),
  };
}

/** GET over https trusting pebble's own listener certificate. */
function getPebble(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca: fs.readFileSync(tlsFixture('pebble-cert.pem')) }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/**
 * Starts pebble with a config written here: its ACME listener on `acmePort`, management on a free port, HTTP-01
 * validated against `httpPort`, names resolved by `dns`. Resolves once the directory is served; killed at teardown.
 */
export async function startPebbleAt(t: Test, acmePort: number, httpPort: number, dns: string): Promise<Pebble> {
  const [mgmtPort, tlsPort] = [await freePort(), await freePort()];
  const file = path.join(tempDir(t), 'pebble.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${mgmtPort}`,
        certificate: tlsFixture('pebble-cert.pem'),
        privateKey: tlsFixture('pebble-key.pem'),
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const child = spawn(PEBBLE, ['-config', file, '-dnsserver', dns], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void child.kill('SIGKILL'));
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    for (const stream of [child.stdout, child.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        if (line.includes('ACME directory available at')) resolve();
      });
    }
    child.once('exit', (code) => reject(new Error(`pebble exited ${code}:\n${output.join('\n')}`)));
  });
  // The line is printed as pebble starts its ACME listener, and its management listener starts in another goroutine:
  // either may not be bound yet (a CI run here saw ECONNREFUSED on the management port fetching the root).
  for (const port of [acmePort, mgmtPort]) await untilListening(port, output);
  const mgmt = `https://127.0.0.1:${mgmtPort}`;
  return { directory: `https://127.0.0.1:${acmePort}/dir`, mgmt, output, root: () => getPebble(`${mgmt}/roots/0`) };
}

/** Resolves once 127.0.0.1:`port` takes a connection; polls every 20 ms for at most 10 s (a bounded wait). */
async function untilListening(port: number, output: string[]): Promise<void> {
  for (let tries = 0; ; tries++) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(false)));
      socket.once('error', () => (socket.destroy(), resolve(true)));
    });
    if (!refused) return;
    if (tries >= 500) throw new Error(`pebble is not listening on ${port} after 10 s:\n${output.join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What the TLS connection of an answer showed, besides the answer. */
export interface TlsAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** SHA-256 fingerprint of the certificate the server presented. */
  fingerprint: string;
}

/**
 * A request over HTTPS to 127.0.0.1:`port` that verifies the chain against `ca` for `servername` (SNI), since the
 * test's names resolve nowhere but in its own DNS server. Rejects on a certificate that does not verify.
 */
export function httpsRequest(
  port: number,
  o: { ca: string; servername: string; method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, ca: o.ca, servername: o.servername, method: o.method ?? 'GET', path: o.path ?? '/', headers: o.headers ?? {}, agent: false },
      (res) => {
        const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const headers = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          resolve({ status: res.statusCode!, headers, text, fingerprint });
        });
      },
    );
    req.once('error', reject);
    req.end(o.body);
  });
}

/**
 * A `fetch` for the console client over verified HTTPS: `init` may carry method, headers and a string body; answers
 * are never followed (redirect: 'manual', as the console client asks).
 */
export function httpsFetch(port: number, ca: string, servername: string): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const a = await httpsRequest(port, {
      ca,
      servername,
      method: init?.method ?? 'GET',
      path: url.pathname + url.search,
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      ...(typeof init?.body === 'string' ? { body: init.body } : {}),
    });
    return new Response([204, 304].includes(a.status) ? null : a.text, { status: a.status, headers: a.headers });
  }) as typeof fetch;
}
