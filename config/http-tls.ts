// Owns the HTTPS keys of http.listen (http.tls.*) and the rules between them and the keys they depend on.
import { ConfigError, key } from './key-def.js';
import { integer, parseBoolean, parsePath } from './values.js';

/** `http.tls.*`: cert and key are resolved against the working directory by the loader and required together. */
export const HTTP_TLS_KEYS = {
  enabled: key({
    doc: 'Serve http.listen over HTTPS with http.tls.cert/key, else the SMTP listeners\' certificate (smtp.tls.cert, ACME\'s or the self-signed pair); answers carry Strict-Transport-Security. Off: plain HTTP.',
    defaultText: 'false',
    default: () => false,
    parse: parseBoolean,
  }),
  cert: key({
    live: true,
    doc: 'PEM certificate chain for HTTPS when it is not the SMTP one; read again when it changes on disk.',
    defaultText: 'none (the SMTP listeners\' certificate)',
    default: () => undefined,
    parse: parsePath,
  }),
  key: key({
    live: true,
    doc: 'PEM private key matching http.tls.cert.',
    defaultText: 'none (the SMTP listeners\' certificate)',
    default: () => undefined,
    parse: parsePath,
  }),
  hstsMaxAge: key({
    live: true,
    doc: 'max-age, in seconds, of the Strict-Transport-Security header on HTTPS answers (RFC 6797): browsers then refuse plain HTTP to this host that long; 0 makes them forget it.',
    defaultText: '31536000',
    default: () => 31_536_000,
    parse: integer(0, 63_072_000, 'seconds'),
  }),
};

/**
 * The rules between the HTTPS keys (`given`: the key was set in the file or the environment). Nothing that only
 * applies to HTTPS is accepted with HTTPS off; with it on, links in mail must not point at plain HTTP, and an ACME
 * certificate must carry the host of http.public_url, or every browser would refuse it.
 */
export function checkHttpTls(values: Map<string, unknown>, given: (key: string) => boolean): void {
  const cert = values.get('http.tls.cert');
  const keyFile = values.get('http.tls.key');
  if ((cert === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(cert === undefined ? 'http.tls.cert' : 'http.tls.key', 'http.tls.cert and http.tls.key must be set together');
  }
  if (values.get('http.tls.enabled') !== true) {
    for (const k of ['http.plain_listen', 'http.tls.cert', 'http.tls.key', 'http.tls.hsts_max_age']) {
      if (given(k)) throw new ConfigError(k, 'has no effect without http.tls.enabled = true');
    }
    return;
  }
  const publicUrl = values.get('http.public_url') as string | undefined;
  if (publicUrl === undefined) return;
  const url = new URL(publicUrl);
  if (url.protocol !== 'https:') {
    throw new ConfigError('http.public_url', 'must be an https:// URL when http.tls.enabled is on (links in mail would go out in clear)');
  }
  const host = url.hostname.toLowerCase();
  const names = [String(values.get('smtp.hostname')).toLowerCase(), ...(values.get('acme.hostnames') as string[])];
  if (values.get('acme.directory_url') !== undefined && cert === undefined && !/^[\d.]+$|^\[/.test(host) && !names.includes(host)) {
    throw new ConfigError('http.public_url', `host ${host} is not on the ACME certificate (smtp.hostname and acme.hostnames): add it to acme.hostnames`);
  }
}
