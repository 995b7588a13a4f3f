// Owns wiring TLS that can be proven (issue 35): MTA-STS policies for routing and the SMTP client, and TLS-RPT's
// collector and reporter, on the DNS resolver, the outbound-connection policy and the store.
import fs from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError } from '../config/keys.js';
import type { Config } from '../config/load.js';
import type { DnsResolver } from '../mta/delivery/dns-resolver.js';
import { createMtaSts } from '../mta/delivery/mta-sts.js';
import { createStsFetch, trustedRoots } from '../mta/delivery/mta-sts-fetch.js';
import { postJson } from '../mta/webhooks/post-json.js';
import type { TargetCheck } from '../mta/delivery/target-guard.js';
import { createTlsReports } from '../mta/jobs/tls-reports.js';
import { signMessage } from '../mta/outbound/dkim-sign.js';
import type { AcceptedDsn } from '../mta/queue/accepted-message.js';
import type { Store } from '../storage/ports/store.js';

/** The TXT records of `name`, each joined; [] when there are none, undefined when the look-up failed. */
export function txtOf(resolver: DnsResolver) {
  return async (name: string): Promise<string[] | undefined> => {
    const r = await resolver.txt(name);
    if (r.ok) return r.records.map((parts) => parts.join(''));
    return r.kind === 'temp' ? undefined : [];
  };
}

/**
 * The certificates of `outbound.tls_ca_file`, each apart (Node reads one PEM block per entry). Read once at start: a
 * file that is missing or holds no certificate stops the start with the key named (exit code 2), as the TLS files do.
 */
export function readCaFile(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError('outbound.tls_ca_file', `${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const certs = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (certs.length === 0) throw new ConfigError('outbound.tls_ca_file', `${file}: no PEM certificate in it`);
  return certs;
}

/**
 * Signs Sluice's own mail (`what`: a TLS-RPT report, a quarantine digest) with the active DKIM key for its From
 * domain of the account `account()` names (the operator's mail, signed as a tenant's is); without one it goes
 * unsigned, with a warning, since receivers that insist on a signature then ignore it.
 */
export function accountSigner(o: { account: () => string; what: string; store: Store; now: () => number; logger: Logger }) {
  return async (raw: Buffer, domain: string): Promise<Buffer> => {
    const handle = o.account();
    const account = await o.store.accounts.findByHandle(handle);
    const key = account && (await o.store.dkimKeys.findSigningKey([account.id], domain, o.now()));
    if (!key) {
      o.logger.warn({ account: handle, domain }, `${o.what} sent unsigned: the account has no active DKIM key for its From domain`);
      return raw;
    }
    return signMessage(raw, { domain, selector: key.selector, privateKeyPem: key.private_key });
  };
}

export function wireTlsOut(o: {
  config: Config;
  live: () => Config;
  store: Store;
  resolver: DnsResolver;
  guard: { resolve(host: string, port: number): Promise<TargetCheck> };
  queue: { accept(messages: AcceptedDsn[]): Promise<unknown> };
  now: () => number;
  logger: Logger;
}) {
  // Read once at start, as the other TLS files are checked (a missing file stops the start with its key named).
  const extraCa = o.config.outbound.tlsCaFile ? readCaFile(o.config.outbound.tlsCaFile) : [];
  const txt = txtOf(o.resolver);
  const mtaSts = createMtaSts({
    txt,
    fetch: createStsFetch({ resolve: (h, p) => o.guard.resolve(h, p), port: () => o.live().outbound.mtaStsPort, ca: () => extraCa }),
    now: o.now,
  });
  const tlsReports = createTlsReports({
    store: o.store.tlsReports,
    queue: o.queue,
    txt,
    from: () => o.live().outbound.tlsReportsFrom,
    sign: accountSigner({ ...o, account: () => o.live().outbound.tlsReportsAccount, what: 'TLS-RPT report' }),
    hostname: o.config.smtp.hostname,
    publicIp: o.config.outbound.publicIp,
    // An https rua is the domain's choice: POSTed through the outbound-connection policy, verified against Node's
    // roots and outbound.tls_ca_file's, no redirects, 30 s for the whole request.
    post: (url, gz) => postJson(o.guard, url, gz, {}, 30_000, { contentType: 'application/tlsrpt+gzip', userAgent: 'sluice-tlsrpt', ca: trustedRoots(extraCa) }),
    now: o.now,
    logger: o.logger,
  });
  return { mtaSts, tlsReports, extraCa: () => extraCa };
}
