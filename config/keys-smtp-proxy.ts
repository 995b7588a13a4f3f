// Owns `smtp.proxy_protocol_from`: the load balancers whose SMTP connections begin with a PROXY protocol header.
import { key } from './key-def.js';
import { parseIp, parseList, type Source } from './values.js';

/** A list of IP addresses (TOML array, or comma-separated in the environment), lower-cased. */
function parseIpList(raw: unknown, source: Source): string[] {
  return parseList(raw, source).map((s, i) => {
    try {
      return parseIp(s).toLowerCase();
    } catch (err) {
      throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** Spread into the `smtp` section. */
export const SMTP_PROXY_KEYS = {
  proxyProtocolFrom: key({
    doc: 'Addresses of the load balancers (HAProxy `send-proxy-v2` or `send-proxy`) in front of the SMTP listeners: a connection from one of them must begin with a PROXY protocol header (v2 or v1) naming the real client, which SPF, DNSBLs, greylisting, AUTH throttles, Received and the log then see; anyone else\'s PROXY header is an unknown command. Empty: no PROXY headers.',
    defaultText: 'empty',
    default: (): string[] => [],
    parse: parseIpList,
  }),
};
