// Owns the table of configuration keys: name, environment variable, default, parser and one line of doc each.
import os from 'node:os';
import {
  integer, oneOf, parseBoolean, parseDir, parseHostname, parseHostPort, parseIp, parseListen,
  parseEmail, parseHostnameList, parseOptionalSocket, parseOptionalUrl, parsePath, parsePositive, parseTarget,
  parseTransportMap, parseUrl, str, type HostPort,
} from './values.js';
import { HTTP_TLS_KEYS } from './http-tls.js';
import { MAX_BUFFERED_BYTES, SPOOL_QUEUE_KEYS } from './keys-spool.js';
import { ABUSE_KEYS } from './abuse.js';
import { SERVER_KEYS } from './keys-server.js';
import { DNS_KEYS } from './keys-dns.js';
import { STORAGE_KEYS } from './keys-storage.js';
import { SMTP_PROXY_KEYS } from './keys-smtp-proxy.js';
import { API_KEYS, SEND_KEYS } from './keys-send.js';
import { SECURITY_KEYS } from './keys-security.js';
import { ACCOUNT_KEYS } from './keys-accounts.js';
import { RETENTION_KEYS } from './retention.js';
import { DESTINATION_KEYS, MTA_STS_KEYS, POOL_KEYS, RETURN_PATH_KEYS } from './keys-deliverability.js';
import { SHAPING_KEYS } from './keys-shaping.js';
import { SMTP_SESSION_KEYS, SUBMISSION_AUTH_KEYS } from './smtp-session.js';
import { flattenKeys, key, type KeySpec, type KeyTree } from './key-def.js';
import { ARC_KEYS, BAYES_KEYS, DNSBL_KEYS, GREYLIST_KEYS } from './keys-inbound-filters.js';
import { INBOUND_KEYS } from './keys-inbound.js';

// Listeners, the DNS resolver and the CLI name host:port values through the key table's module; the key machinery too.
export { ConfigError, ConfigErrors, envName, type ConfigOf, type KeyDef, type KeySpec } from './key-def.js';
export {
  formatHostPort, parseAllowTarget, socketTarget, type AllowTarget, type HostPort, type SocketTarget, type Source,
} from './values.js';
export type { DnsListSite } from './keys-inbound-filters.js';

/**
 * Largest message Sluice accepts (ARCHITECTURE.md: up to 30 MB): the default SIZE of both listeners (RFC 1870) and
 * the REST send limit (413 beyond it). The one place the number is written.
 */
export const MAX_MESSAGE_BYTES = 30 * 1024 * 1024;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Outbound scanning policies (`filters.outbound_policy`, and per account with `sluice accounts scan-policy`). */
export const SCAN_POLICIES = ['enforce', 'monitor', 'off'] as const;
export type ScanPolicy = (typeof SCAN_POLICIES)[number];

const listen = (def: string) => ({
  defaultText: def,
  default: () => parseHostPort(def, true),
  parse: parseListen,
});

const optionalListen = {
  defaultText: 'none',
  default: () => undefined,
  parse: parseListen,
};

const messageBytes = {
  defaultText: String(MAX_MESSAGE_BYTES),
  default: () => MAX_MESSAGE_BYTES,
  parse: integer(1024, 1_073_741_824, 'bytes'),
};

/**
 * Every configuration key Sluice knows, nested as the Config object is. A key's dotted name is its path with each
 * camelCase property in snake_case (`smtp.mx.maxMessageBytes` ↔ `smtp.mx.max_message_bytes`); key names are a
 * contract with operators and tests.
 */
export const KEY_TREE = {
  /** Resolved against the working directory by the loader. */
  dataDir: key({
    doc: 'Directory holding the SQLite database, the generated TLS pair and every other piece of state.',
    defaultText: './data',
    default: () => './data',
    parse: parseDir,
  }),
  http: {
    listen: key({ doc: 'Address of the REST control plane and web console (HTTPS when http.tls.enabled; production: 0.0.0.0:443).', ...listen('127.0.0.1:8080') }),
    plainListen: key({
      doc: 'Plain-HTTP listener beside the HTTPS one (production: 0.0.0.0:80): answers ACME HTTP-01 challenges and redirects every other request to https (301; 308 for methods other than GET and HEAD); it serves nothing else. Needs http.tls.enabled.',
      ...optionalListen,
    }),
    publicUrl: key({
      doc: 'Base URL clients reach the control plane at (unsubscribe and tracking links, the host custom tracking domains point at); derived from the bound HTTP address when unset.',
      defaultText: 'derived from http.listen',
      default: () => undefined,
      parse: parseUrl,
    }),
    metricsListen: key({
      doc: 'Address of the Prometheus /metrics listener (no authentication, so loopback by default); "" serves /metrics on http.listen instead.',
      defaultText: '127.0.0.1:9464',
      default: (): HostPort | undefined => parseHostPort('127.0.0.1:9464', true),
      parse: (raw: unknown): HostPort | undefined => (raw === '' ? undefined : parseListen(raw)),
    }),
    consoleSessionHours: key({
      doc: 'Lifetime of a web console session (/console) in hours; signing in again starts a new one.',
      defaultText: '12',
      default: () => 12,
      parse: integer(1, 720, 'hours'),
    }),
    /** HTTPS on http.listen (config/http-tls.ts). */
    tls: HTTP_TLS_KEYS,
  },
  smtp: {
    hostname: key({
      doc: 'Name used in SMTP greetings, Received headers, Message-IDs and as the Authentication-Results authserv-id.',
      defaultText: 'the OS host name',
      default: () => os.hostname(),
      parse: parseHostname,
    }),
    mx: {
      listen: key({ doc: 'Inbound MX listener (production: 0.0.0.0:25).', ...listen('0.0.0.0:2525') }),
      maxMessageBytes: key({
        live: true,
        doc: 'Largest message the MX accepts, in bytes: advertised with SIZE (RFC 1870), larger ones get 552 5.3.4.',
        ...messageBytes,
      }),
      greetDelayMs: key({
        doc: 'Pause before the 220 greeting; a client that talks first is refused (early-talker check, as Postfix postscreen\'s greet wait). 0 greets at once, as Postfix smtpd does.',
        defaultText: '0',
        default: () => 0,
        parse: integer(0, 30_000, 'milliseconds'),
      }),
    },
    /** `smtp.max_header_bytes` and `smtp.max_mime_depth`: shared by both listeners. */
    maxHeaderBytes: key({
      live: true,
      doc: 'Largest header section of a message (or of any MIME part in it), in bytes, on both listeners; larger ones get 552 5.3.4 (Postfix header_size_limit).',
      defaultText: '102400',
      default: () => 102_400,
      parse: integer(1024, 67_108_864, 'bytes'),
    }),
    maxMimeDepth: key({
      live: true,
      doc: 'Deepest MIME nesting (multipart and attached messages) a message may have on both listeners; deeper ones get 554 5.6.0 (Postfix mime_nesting_limit).',
      defaultText: '100',
      default: () => 100,
      parse: integer(1, 1000, 'levels'),
    }),
    maxBufferedBytes: MAX_BUFFERED_BYTES,
    /** `smtp.junk_command_limit`, `smtp.session_deadline_minutes` (config/smtp-session.ts). */
    ...SMTP_SESSION_KEYS,
    submission: {
      listen: key({
        doc: 'SMTP submission listener with STARTTLS (production: 0.0.0.0:587).',
        ...listen('0.0.0.0:2587'),
      }),
      tlsListen: key({
        doc: 'Optional implicit-TLS submission listener (production: 0.0.0.0:465).',
        ...optionalListen,
      }),
      maxMessageBytes: key({
        live: true,
        doc: 'Largest message accepted over submission, in bytes: advertised with SIZE (RFC 1870), larger ones get 552 5.3.4 (the REST limit is 30 MB too).',
        ...messageBytes,
      }),
      maxConnectionsPerIp: key({
        live: true,
        doc: 'Concurrent submission sessions from one client address; more get 421 4.7.0 at connect.',
        defaultText: '50',
        default: () => 50,
        parse: integer(1, 10_000, 'a count'),
      }),
      ...SUBMISSION_AUTH_KEYS,
      allowInsecureLoopbackAuth: key({
        doc: 'Let a client on 127.0.0.0/8 or ::1 AUTH without TLS (a local app that cannot do STARTTLS); everyone else must use TLS first.',
        defaultText: 'false',
        default: () => false,
        parse: parseBoolean,
      }),
    },
    ...SMTP_PROXY_KEYS,
    /** Resolved against the working directory and required together, by the loader. */
    tls: {
      cert: key({
        live: true,
        doc: 'PEM certificate chain for STARTTLS/implicit TLS; when unset, ACME\'s (acme.directory_url) or else a self-signed pair generated into data_dir (into the database on PostgreSQL, one for every node).',
        defaultText: 'none (self-signed pair generated into data_dir/tls/, or the database on PostgreSQL)',
        default: () => undefined,
        parse: parsePath,
      }),
      key: key({
        live: true,
        doc: 'PEM private key matching smtp.tls.cert.',
        defaultText: 'none (self-signed pair generated into data_dir/tls/, or the database on PostgreSQL)',
        default: () => undefined,
        parse: parsePath,
      }),
    },
  },
  /** ACME (RFC 8555): a certificate for smtp.hostname and acme.hostnames, kept in data_dir/acme/ (or the database) and renewed. */
  acme: {
    directoryUrl: key({
      doc: 'ACME directory URL (e.g. https://acme-v02.api.letsencrypt.org/directory): get and renew the SMTP (and HTTPS) certificate by HTTP-01 on the HTTP listener (http.plain_listen when http.tls.enabled). Unset: no ACME.',
      defaultText: 'none (off)',
      default: () => undefined,
      parse: parseOptionalUrl,
    }),
    email: key({
      doc: 'Contact address registered with the ACME account (expiry notices from the CA).',
      defaultText: 'none',
      default: () => undefined,
      parse: parseEmail,
    }),
    hostnames: key({
      doc: 'More names for the ACME certificate besides smtp.hostname (e.g. the host of http.public_url, which unsubscribe and tracking links use); each must reach the HTTP listener on port 80.',
      defaultText: 'empty',
      default: () => [],
      parse: parseHostnameList,
    }),
    caFile: key({
      doc: 'PEM CA certificate to trust for the ACME directory besides the system ones (a private ACME CA such as step-ca or pebble).',
      defaultText: 'none (system CAs)',
      default: () => undefined,
      parse: parsePath,
    }),
  },
  /** `dns.*` (config/keys-dns.ts). */
  dns: DNS_KEYS,
  outbound: {
    smarthost: key({
      live: true,
      doc: 'Relay every outbound message through this host:port instead of the recipients\' MX hosts.',
      defaultText: 'none',
      default: () => undefined,
      parse: parseTarget,
    }),
    smarthostUser: key({
      live: true,
      doc: 'AUTH user name for the smarthost (AUTH PLAIN/LOGIN, only over TLS).',
      defaultText: 'none',
      default: () => undefined,
      parse: str,
    }),
    smarthostPassword: key({
      live: true,
      doc: 'AUTH password for the smarthost.',
      defaultText: 'none',
      default: () => undefined,
      parse: str,
      secret: true,
    }),
    smarthostTls: key({
      live: true,
      doc: 'TLS to the smarthost: "starttls" (opportunistic), "required" (STARTTLS or fail) or "implicit" (TLS from connect).',
      defaultText: 'starttls',
      default: () => 'starttls' as const,
      parse: oneOf(['starttls', 'required', 'implicit'] as const),
    }),
    transportMap: key({
      live: true,
      doc: 'Per-recipient-domain routes (domain = "host:port"), consulted before the smarthost and DNS.',
      defaultText: 'empty',
      default: () => ({}),
      parse: parseTransportMap,
      table: true,
    }),
    mxPort: key({
      live: true,
      doc: 'TCP port dialled on MX hosts (RFC 5321 uses 25; tests and benchmarks on loopback use another).',
      defaultText: '25',
      default: () => 25,
      parse: integer(1, 65535, 'a port'),
    }),
    publicIp: key({
      doc: 'Public address receivers see our outbound mail come from; check-domain evaluates SPF for it.',
      defaultText: 'none',
      default: () => undefined,
      parse: parseIp,
    }),
    lockdown: key({
      live: true,
      doc: 'Domain Lockdown: "dns" requires a _sluice.<domain> TXT record naming the account; "off" disables the check.',
      defaultText: 'dns',
      default: () => 'dns' as const,
      parse: oneOf(['dns', 'off'] as const),
    }),
    /** `outbound.return_path_domain`, `outbound.feedback_address`, MTA-STS and TLS-RPT (config/keys-deliverability.ts). */
    ...RETURN_PATH_KEYS,
    ...MTA_STS_KEYS,
    ...POOL_KEYS,
    ...DESTINATION_KEYS,
    /** `outbound.shaping_rules`, `outbound.warmup`: shaping that listens, and warm-up (config/keys-shaping.ts). */
    ...SHAPING_KEYS,
  },
  /** `send.*`: the bounds of a REST send; `api.*`: how long its Idempotency-Key keeps an answer (config/keys-send.ts). */
  send: SEND_KEYS,
  api: API_KEYS,
  /** `accounts.max_suppressions`, `accounts.max_sub_accounts`: what one account keeps (config/keys-accounts.ts). */
  accounts: ACCOUNT_KEYS,
  /** The outbound-connection policy (config/keys-security.ts). */
  security: SECURITY_KEYS,
  filters: {
    spamThreshold: key({
      doc: 'Spam score (built-in rules, DNS list weights and the classifier inbound; plus rspamd\'s score outbound) at or above which the recipient domain\'s abuse policy applies (inbound; rspamd\'s own action counts by its own thresholds) and outbound mail is SUSPECT.',
      defaultText: '5',
      default: () => 5,
      parse: parsePositive,
    }),
    confirmedThreshold: key({
      doc: 'Outbound: spam score at or above which a message is CONFIRMED spam (refused under the enforce policy); rspamd\'s reject action and GTUBE are CONFIRMED too.',
      defaultText: '15',
      default: () => 15,
      parse: parsePositive,
    }),
    outboundPolicy: key({
      doc: 'Outbound scanning policy of accounts without their own (sluice accounts scan-policy): "enforce" refuses CONFIRMED spam and viruses and blocks sender identities over the abuse limits, "monitor" scans, logs and alerts but refuses and blocks nothing, "off" scans nothing.',
      defaultText: 'enforce',
      default: () => 'enforce' as const,
      parse: oneOf(SCAN_POLICIES),
    }),
    onScannerError: key({
      doc: 'Outbound, when rspamd or clamd is down: "tempfail" refuses the send for now (REST 503, SMTP 451 4.7.1; nothing queued) or "accept" sends it with that scanner\'s disposition UNKNOWN and the failure in its verdict record.',
      defaultText: 'tempfail',
      default: () => 'tempfail' as const,
      parse: oneOf(['tempfail', 'accept'] as const),
    }),
    rspamd: {
      url: key({
        doc: 'Base URL of an rspamd normal worker (e.g. http://127.0.0.1:11333); each inbound and outbound message is scored with POST /checkv2. Empty: rspamd off.',
        defaultText: 'empty (off)',
        default: () => undefined,
        parse: parseOptionalUrl,
      }),
      timeoutMs: key({
        doc: 'Deadline in milliseconds for one rspamd check; past it the scanner counts as down.',
        defaultText: '5000',
        default: () => 5000,
        parse: integer(1, 600_000, 'milliseconds'),
      }),
      failure: key({
        doc: 'Inbound, when rspamd or clamd is down: "tempfail" answers 451 4.7.1 (the sender retries) or "accept-and-tag" accepts with an X-Sluice-Spam-Scan (or X-Sluice-Virus-Scan): failed header (outbound: filters.on_scanner_error).',
        defaultText: 'tempfail',
        default: () => 'tempfail' as const,
        parse: oneOf(['tempfail', 'accept-and-tag'] as const),
      }),
    },
    clamd: {
      address: key({
        doc: 'ClamAV clamd to scan every inbound and outbound message with (INSTREAM): host:port of its TCPSocket or the absolute path of its LocalSocket. Empty: clamd off (outbound still catches the EICAR test string).',
        defaultText: 'empty (off)',
        default: () => undefined,
        parse: parseOptionalSocket,
      }),
      timeoutMs: key({
        doc: 'Deadline in milliseconds for one clamd scan; past it the scanner counts as down.',
        defaultText: '10000',
        default: () => 10_000,
        parse: integer(1, 600_000, 'milliseconds'),
      }),
    },
    bayes: BAYES_KEYS,
    dnsbl: DNSBL_KEYS,
  },
  /** `abuse.*` (config/abuse.ts). */
  abuse: ABUSE_KEYS,
  inbound: {
    ...INBOUND_KEYS,
    greylist: GREYLIST_KEYS,
    arc: ARC_KEYS,
  },
  queue: {
    leaseSeconds: key({
      doc: 'Seconds a worker holds what it claimed (deliveries, webhook batches, alerts); renewed every third of it while the work is in flight, taken over by any worker once expired (a crashed worker\'s work moves on after this long).',
      defaultText: '60',
      default: () => 60,
      parse: integer(1, 3600, 'seconds'),
    }),
    ...SPOOL_QUEUE_KEYS,
  },
  /** `retention.*` (config/retention.ts; the retention job is mta/jobs/retention.ts). */
  retention: RETENTION_KEYS,
  server: SERVER_KEYS,
  /** `storage.*` (config/keys-storage.ts). */
  storage: STORAGE_KEYS,
  log: {
    level: key({
      live: true,
      doc: `Log level: ${LOG_LEVELS.join(', ')}.`,
      defaultText: 'info',
      default: () => 'info' as const,
      parse: oneOf(LOG_LEVELS),
    }),
  },
} satisfies KeyTree;

/** Every configuration key Sluice knows, in KEY_TREE order (the order of `config reference` and `config print`). */
export const KEYS: readonly KeySpec[] = flattenKeys(KEY_TREE, []);
