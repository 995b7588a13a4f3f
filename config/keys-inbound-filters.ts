// Owns the configuration keys of inbound filtering beyond the spam threshold and rspamd: the statistical
// classifier (filters.bayes.*), the DNS lists (filters.dnsbl.*), greylisting (inbound.greylist.*) and ARC sealing
// (inbound.arc.*); mounted into KEY_TREE by config/keys.ts.
import net from 'node:net';
import { key, type KeyTree } from './key-def.js';
import { integer, parseBoolean, parseHostname, parseList, parsePath, parsePositive, type Source } from './values.js';

/** `filters.bayes.*`: the classifier that learns (filters/bayes.ts). */
export const BAYES_KEYS = {
  minLearned: key({
    doc: 'Learned spam and learned ham messages (each) the classifier needs, its global model and the account\'s together, before it scores mail; below it abstains (a fresh install until trained with sluice filter train).',
    defaultText: '200',
    default: () => 200,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  maxTokens: key({
    doc: 'Distinct tokens one model (the global one, each account\'s) holds at most (four times SpamAssassin\'s bayes_expiry_max_db_size, 150,000; about 56 bytes a token in SQLite); a learn past it forgets the rarest tokens: those counted in the fewest messages, the least recently learned of them first.',
    defaultText: '600000',
    default: () => 600_000,
    parse: integer(1000, 10_000_000, 'a count'),
  }),
  autolearn: key({
    doc: 'Learn inbound mail whose verdict is certain without the classifier, as SpamAssassin\'s bayes_auto_learn: spam when the score of the rules and DNS lists alone reaches filters.bayes.autolearn_spam_score (or rspamd answers reject), ham when every recipient safelisted a sender that passed DMARC. Into the model of the recipients\' account and the global one, at most filters.bayes.autolearn_per_hour per account; a later correction (quarantine release, delete as spam, a report) moves what was learned, in both.',
    defaultText: 'true',
    default: () => true,
    parse: parseBoolean,
  }),
  autolearnSpamScore: key({
    doc: 'Score of the rules and DNS lists alone (the classifier left out) at which filters.bayes.autolearn learns a message as spam (SpamAssassin\'s bayes_auto_learn_threshold_spam).',
    defaultText: '12',
    default: () => 12,
    parse: parsePositive,
  }),
  autolearnPerHour: key({
    doc: 'Messages filters.bayes.autolearn learns per recipient account per hour at most, in each process (a flood of one kind of mail does not fill the model); past it, certain mail is not learned until the hour turns.',
    defaultText: '200',
    default: () => 200,
    parse: integer(1, 1_000_000, 'a count'),
  }),
} satisfies KeyTree;

/**
 * One DNS list: its zone, which answers count (for each of the four octets, the inclusive ranges it may take; null:
 * any answer in 127.0.0.0/8) and its weight.
 */
export interface DnsListSite {
  zone: string;
  octets: [number, number][][] | null;
  weight: number;
}

const ZONE_RE = /^(?=.{1,200}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)+$/;

/** One octet pattern of a reply filter: `n`, `[n..m]` or `[n;m;…]` (Postfix postscreen_dnsbl_sites syntax). */
function octet(p: string): [number, number][] {
  const num = (s: string) => {
    if (!/^\d{1,3}$/.test(s) || Number(s) > 255) throw new Error(`"${s}" is not an octet`);
    return Number(s);
  };
  const range = /^\[(\d+)\.\.(\d+)\]$/.exec(p);
  if (range) return [[num(range[1]!), num(range[2]!)]];
  const set = /^\[([\d;]+)\]$/.exec(p);
  if (set) return set[1]!.split(';').map((n) => [num(n), num(n)]);
  return [[num(p), num(p)]];
}

/**
 * `zone[=a.b.c.d][*weight]`, Postfix postscreen_dnsbl_sites syntax: each octet of the filter a number, `[n..m]` or
 * `[n;m]` (`;`, not Postfix's `,`, which separates list items in the environment); the weight an integer, negative
 * for an allowlist (DNSWL); default 1.
 */
export function parseDnsListSite(text: string): DnsListSite {
  const m = /^([^=*\s]+)(?:=([^*\s]+))?(?:\*(-?\d{1,4}))?$/.exec(text.trim().toLowerCase());
  if (!m || !ZONE_RE.test(m[1]!)) throw new Error(`"${text}" is not zone[=a.b.c.d][*weight]`);
  // Octets split at dots outside brackets: `127.0.0.[2..11]` is four octets.
  const parts = m[2]?.match(/\[[^\]]*\]|[^.]+/g) ?? (m[2] === undefined ? undefined : []);
  if (parts && parts.length !== 4) throw new Error(`"${text}": the reply filter needs four octets`);
  const octets = parts ? parts.map(octet) : null;
  const weight = m[3] === undefined ? 1 : Number(m[3]);
  if (weight === 0) throw new Error(`"${text}": a weight of 0 counts nothing`);
  return { zone: m[1]!, octets, weight };
}

const sites = (raw: unknown, source: Source) =>
  parseList(raw, source).map((s, i): DnsListSite => {
    try {
      return parseDnsListSite(s);
    } catch (err) {
      throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
    }
  });

/** `filters.dnsbl.*`: DNS block- and allowlists (mta/inbound/dnsbl.ts asks them; filters/dnsbl.ts scores). */
export const DNSBL_KEYS = {
  sites: key({
    doc: 'Client IP lists as Postfix postscreen_dnsbl_sites: "zone[=a.b.c.d]*weight", e.g. "zen.spamhaus.org=127.0.0.[2..11]*3", "list.dnswl.org=127.0.[0..255].[1..3]*-2"; a negative weight is an allowlist.',
    defaultText: 'empty (off)',
    default: () => [],
    parse: sites,
  }),
  threshold: key({
    doc: 'Summed weight of the client lists at or above which RCPT is refused with 554 5.7.1; below it the weight is added to the spam score.',
    defaultText: '3',
    default: () => 3,
    parse: integer(1, 1000, 'a weight'),
  }),
  domainSites: key({
    doc: 'Domain lists (DBL/URIBL style) for the envelope and From domains and the hosts of links: "zone[=a.b.c.d]*weight", e.g. "dbl.spamhaus.org=127.0.1.[2..99]*4"; each listing zone adds its weight to the spam score once.',
    defaultText: 'empty (off)',
    default: () => [],
    parse: sites,
  }),
  cacheMaxEntries: key({
    doc: 'Answers kept in each process\'s DNS list cache (each for its record\'s TTL; "not listed" for 5 minutes).',
    defaultText: '10000',
    default: () => 10_000,
    parse: integer(0, 10_000_000, 'a count'),
  }),
} satisfies KeyTree;

/** A CIDR network (`192.0.2.0/24`, `2001:db8::/32`) or a single address, as text. */
function parseNetwork(text: string): string {
  const [addr = '', bits] = text.trim().split('/');
  const family = net.isIP(addr);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) throw new Error(`"${text}" is not an address or CIDR network`);
  return `${addr.toLowerCase()}/${bits ?? max}`;
}

/** `inbound.greylist.*`: greylisting at RCPT (mta/inbound/greylist.ts), off until a domain is named. */
export const GREYLIST_KEYS = {
  domains: key({
    doc: 'Served domains whose recipients are greylisted (RFC 6647), or "*" for all; empty: greylisting off.',
    defaultText: 'empty (off)',
    default: () => [],
    parse: (raw: unknown, source: Source) =>
      parseList(raw, source).map((d, i) => {
        const name = d.trim().toLowerCase().replace(/\.$/, '');
        if (name !== '*' && !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/.test(name)) {
          throw new Error(`item ${i}: "${d}" is not a domain name or *`);
        }
        return name;
      }),
  }),
  delaySeconds: key({
    doc: 'Seconds after a first attempt before a retry of the same (client /24 or /64, sender, recipient) is accepted; earlier ones get 450 4.7.1 again.',
    defaultText: '300',
    default: () => 300,
    parse: integer(0, 86_400, 'seconds'),
  }),
  retryWindowHours: key({
    doc: 'Hours a first attempt waits for its retry; a retry later than this counts as a first attempt again.',
    defaultText: '48',
    default: () => 48,
    parse: integer(1, 720, 'hours'),
  }),
  newTripletsPerNetworkHour: key({
    doc: 'New triplets one client network (/24 or /64) may add per hour while they wait for their retry; over it a first attempt gets the same 450 4.7.1 and is not remembered (logged once per network per hour).',
    defaultText: '1000',
    // 1,000: a network that retries passes (its triplets leave the count) and after auto_allow_after passes is not
    // greylisted at all, so only never-retried attempts fill it; at ~175 B a triplet kept retry_window_hours (48),
    // at most ~8 MB of rows (and their index entries) per network, where one network added 28,508 in 10 s uncapped.
    default: () => 1000,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  passDays: key({
    doc: 'Days a triplet that passed is let through without delay while it keeps being seen (and a client network stays auto-allowed).',
    defaultText: '35',
    default: () => 35,
    parse: integer(1, 3650, 'days'),
  }),
  autoAllowAfter: key({
    doc: 'Passed triplets after which a client network is no longer greylisted at all (postgrey\'s auto-whitelist-clients).',
    defaultText: '5',
    default: () => 5,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  exemptNetworks: key({
    doc: 'Client networks never greylisted (CIDR or addresses), e.g. the downstream servers of your domains when they send mail back through Sluice; DNSWL-listed clients and safelisted senders whose SPF passes are exempt anyway.',
    defaultText: 'empty',
    default: () => [],
    parse: (raw: unknown, source: Source) =>
      parseList(raw, source).map((n, i) => {
        try {
          return parseNetwork(n);
        } catch (err) {
          throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
        }
      }),
  }),
} satisfies KeyTree;

/** `inbound.arc.*`: ARC-sealing relayed mail (mta/inbound/arc-seal.ts), off until a domain is set. */
export const ARC_KEYS = {
  domain: key({
    doc: 'Domain (d=) of the ARC sets Sluice adds to every message it relays (RFC 8617); the downstream must trust it as a sealer. Unset: no sealing.',
    defaultText: 'none (off)',
    default: () => undefined,
    parse: (raw: unknown) => parseHostname(raw).toLowerCase().replace(/\.$/, ''),
  }),
  selector: key({
    doc: 'Selector (s=) of the ARC key: publish its public key at <selector>._domainkey.<domain> (sluice arc record prints the record).',
    defaultText: 'sluice-arc',
    default: () => 'sluice-arc',
    parse: (raw: unknown) => {
      const s = String(raw).trim().toLowerCase();
      if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(s)) throw new Error(`"${s}" is not a selector`);
      return s;
    },
  }),
  key: key({
    doc: 'PEM private key (RSA or Ed25519) of the ARC sets (with several nodes, the same file on each); when unset, Sluice generates an RSA-2048 key on first use and keeps it in the store, shared by every process and node on it (a key an older Sluice generated into data_dir/arc/ is taken over).',
    defaultText: 'none (generated into the store)',
    default: () => undefined,
    parse: parsePath,
  }),
} satisfies KeyTree;
