// Owns certificates for TLS tests: a self-signed pair naming some hosts, which a test trusts by listing it as a CA.
import { generate } from 'selfsigned';

/** A self-signed pair for `names` (subjectAltName DNS entries), valid from a day ago for `days`. */
export async function selfSignedFor(names: string[], days = 30): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: names[0]! }], {
    keySize: 2048,
    notBeforeDate: new Date(Date.now() - 86_400_000),
    notAfterDate: new Date(Date.now() + days * 86_400_000),
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}
