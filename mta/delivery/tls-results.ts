// Owns what one TLS attempt to a policy domain came to (RFC 8460 §4.3 result types), as the SMTP client and routing
// report it for TLS-RPT, and reading a failure of Node's TLS as one of them.
import tls from 'node:tls';
import type { StsPolicy } from './mta-sts.js';

/** RFC 8460 §4.3 result types Sluice reports (DANE's are not: it has no validating resolver). */
export type TlsResultType =
  | 'success'
  | 'starttls-not-supported'
  | 'certificate-host-mismatch'
  | 'certificate-expired'
  | 'certificate-not-trusted'
  | 'validation-failure'
  | 'sts-policy-fetch-error'
  | 'sts-policy-invalid'
  | 'sts-webpki-invalid';

/** One session's (or one policy look-up's) result for a recipient domain's TLS-RPT report. */
export interface TlsResult {
  policyDomain: string;
  /** The policy in force; null when none could be had (RFC 8460 policy-type `no-policy-found`). */
  policy: Pick<StsPolicy, 'mode' | 'mx' | 'lines'> | null;
  mxHost: string | null;
  receivingIp: string | null;
  result: TlsResultType;
}

export type TlsResultSink = (r: TlsResult) => void;

/**
 * The result type of a TLS failure as Node (or nodemailer wrapping it) words it: a name the certificate does not
 * cover, an expired one, one no trusted root signs, or a server that would not start TLS at all.
 */
export function tlsFailureType(err: { message?: string; code?: string; command?: string }): TlsResultType {
  const m = err.message ?? '';
  if (/does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/i.test(m)) return 'certificate-host-mismatch';
  if (/certificate has expired|CERT_HAS_EXPIRED/i.test(m)) return 'certificate-expired';
  if (/self.signed|unable to (verify|get local issuer)|certificate chain|not trusted|unknown ca/i.test(m)) return 'certificate-not-trusted';
  if (err.command === 'STARTTLS' && !/initiating TLS/i.test(m)) return 'starttls-not-supported';
  if (/STARTTLS/i.test(m) && !/initiating TLS/i.test(m)) return 'starttls-not-supported';
  return 'validation-failure';
}

/** The result of a session that is up: TLS, a trusted chain and the MX name in the certificate, or why not. */
export function sessionResult(socket: { encrypted?: boolean; authorized?: boolean; authorizationError?: Error | string | null; getPeerCertificate?: () => tls.PeerCertificate } | undefined, name: string): TlsResultType {
  if (!socket?.encrypted) return 'starttls-not-supported';
  if (!socket.authorized) {
    const code = String(socket.authorizationError ?? '');
    return code === 'CERT_HAS_EXPIRED' ? 'certificate-expired' : 'certificate-not-trusted';
  }
  const cert = socket.getPeerCertificate?.();
  return cert && tls.checkServerIdentity(name, cert) === undefined ? 'success' : 'certificate-host-mismatch';
}
