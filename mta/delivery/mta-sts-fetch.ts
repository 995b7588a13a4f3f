// Owns fetching an MTA-STS policy (RFC 8461 §3.3): HTTPS to mta-sts.<domain> with a verified certificate, through the
// outbound-connection policy, no redirects, a bounded body, a deadline.
import https from 'node:https';
import tls from 'node:tls';
import { MAX_POLICY_BYTES } from './mta-sts.js';
import type { TargetCheck } from './target-guard.js';

export interface StsFetchDeps {
  /** The outbound-connection policy's resolve: the policy host is the recipient domain's choice. */
  resolve: (host: string, port: number) => Promise<TargetCheck>;
  /** `outbound.mta_sts_port` (443; tests on loopback use another). */
  port: () => number;
  /** CA certificates trusted besides Node's bundled roots (`outbound.tls_ca_file`'s). */
  ca: () => readonly string[];
  /** Deadline of one fetch, connect to last byte (RFC 8461 §3.3 suggests 60 s; a delivery waits on it). */
  timeoutMs?: number;
}

/** Trusted roots for verified TLS (MTA-STS policy fetches, enforce-mode MX hosts): Node's, plus the operator's. */
export function trustedRoots(extra: readonly string[]): string[] {
  return [...tls.rootCertificates, ...extra];
}

/** Error codes of Node's certificate checks: the policy host's certificate is not valid (RFC 8460 sts-webpki-invalid). */
const WEBPKI = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME|ERR_TLS/i;

function failure(message: string, result: 'sts-policy-fetch-error' | 'sts-webpki-invalid'): Error {
  return Object.assign(new Error(message), { result });
}

/** Creates `fetch(domain)`: the policy body of `https://mta-sts.<domain>/.well-known/mta-sts.txt`, or a rejection. */
export function createStsFetch(deps: StsFetchDeps) {
  return async function fetchPolicy(domain: string): Promise<string> {
    const host = `mta-sts.${domain}`;
    const port = deps.port();
    const target = await deps.resolve(host, port);
    if (!target.ok) {
      const why = target.kind === 'unresolved' ? target.reason : `${host} resolves only to addresses Sluice does not connect to`;
      throw failure(`MTA-STS policy of ${domain}: ${why}`, 'sts-policy-fetch-error');
    }
    const address = target.addresses[0]!;
    return new Promise<string>((resolve, reject) => {
      const req = https.get(
        {
          host: address,
          port,
          path: '/.well-known/mta-sts.txt',
          servername: host,
          headers: { Host: port === 443 ? host : `${host}:${port}`, 'User-Agent': 'Sluice MTA-STS' },
          ca: trustedRoots(deps.ca()),
          rejectUnauthorized: true,
          timeout: deps.timeoutMs ?? 10_000,
          agent: false,
        },
        (res) => {
          // RFC 8461 §3.3: 200 only, redirects are not followed; the media type is text/plain.
          if (res.statusCode !== 200) {
            res.resume();
            return reject(failure(`MTA-STS policy of ${domain}: HTTP ${res.statusCode ?? '?'}`, 'sts-policy-fetch-error'));
          }
          if (!/^text\/plain\b/i.test(res.headers['content-type'] ?? '')) {
            res.resume();
            return reject(failure(`MTA-STS policy of ${domain}: Content-Type is not text/plain`, 'sts-policy-fetch-error'));
          }
          const chunks: Buffer[] = [];
          let got = 0;
          res.on('data', (c: Buffer) => {
            got += c.length;
            if (got > MAX_POLICY_BYTES) {
              req.destroy();
              return reject(failure(`MTA-STS policy of ${domain}: larger than ${MAX_POLICY_BYTES} bytes`, 'sts-policy-fetch-error'));
            }
            chunks.push(c);
          });
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', (err) => reject(failure(`MTA-STS policy of ${domain}: ${err.message}`, 'sts-policy-fetch-error')));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (err: Error & { code?: string }) => {
        const webpki = WEBPKI.test(err.code ?? '') || /certificate/i.test(err.message);
        reject(failure(`MTA-STS policy of ${domain}: ${err.message}`, webpki ? 'sts-webpki-invalid' : 'sts-policy-fetch-error'));
      });
    });
  };
}
