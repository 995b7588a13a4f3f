// Owns gathering what the console's overview shows of this process that no route or store holds: the version, when
// it started, its certificates (read as a restart would, never made), and its last error lines (bin/error-ring.ts).
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { CertificateFact, OverviewFacts } from '../control-api/console/overview-facts.js';
import { certInfo, loadTlsPair, type TlsPurpose } from '../mta/smtp/tls.js';
import type { TlsMaterial } from '../mta/smtp/tls-material.js';
import { createErrorRing, recordErrors } from './error-ring.js';

/** No self-signed pair was made yet (the overview reads; it never makes one). */
class NoPairYet extends Error {}

/** `material` whose self-signed pair is read, never made. */
function readOnly(material: TlsMaterial): TlsMaterial {
  return {
    where: material.where,
    acmeLabels: material.acmeLabels,
    selfSignedLabels: material.selfSignedLabels,
    selfSigned: () => material.selfSigned(() => Promise.reject(new NoPairYet('no certificate yet: one is made when an SMTP listener or HTTPS starts'))),
    acmePair: () => material.acmePair(),
    installAcmePair: () => Promise.reject(new Error('read only')),
    acmeAccountKey: () => Promise.reject(new Error('read only')),
    acmeStamp: () => material.acmeStamp(),
  };
}

/** The certificates of `config`: the SMTP listeners', and HTTPS's when it is on and has files of its own. */
export async function certificateFacts(config: Config, material: TlsMaterial): Promise<CertificateFact[]> {
  const own = config.http.tls.enabled && config.http.tls.cert !== undefined;
  const uses: [TlsPurpose, string][] = [['smtp', config.http.tls.enabled && !own ? 'SMTP (STARTTLS, implicit TLS) and HTTPS' : 'SMTP (STARTTLS, implicit TLS)']];
  if (own) uses.push(['http', 'HTTPS']);
  const out: CertificateFact[] = [];
  for (const [purpose, use] of uses) {
    try {
      const pair = await loadTlsPair(config, readOnly(material), purpose);
      const info = certInfo(pair.cert);
      out.push({ use, source: pair.source, names: info.names, notAfter: info.notAfter, fingerprint: info.fingerprint });
    } catch (err) {
      out.push({ use, error: (err as Error).message });
    }
  }
  return out;
}

/**
 * The logger every part of the core logs through (its error lines kept for the overview) and, once the TLS material
 * is wired, the overview's facts. `now`: the injected clock, for the start time and each kept line's.
 */
export function wireOverview(logger: Logger, now: () => number) {
  const errors = createErrorRing();
  const startedAt = now();
  return {
    logger: recordErrors(logger, errors, now),
    facts: (o: { config: () => Config; material: TlsMaterial; version: string; storageBytes: () => Promise<number> }): OverviewFacts => ({
      version: o.version,
      startedAt,
      certificates: () => certificateFacts(o.config(), o.material),
      lastErrors: () => errors.lines(),
      storageBytes: o.storageBytes,
    }),
  };
}
