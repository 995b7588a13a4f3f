// Checks the key table's seam: dotted names derive from the Config paths, and each value lands at its path.
import path from 'node:path';
import t from 'tap';
import { KEYS, MAX_MESSAGE_BYTES } from '../../config/keys.js';
import { loadConfig } from '../../config/load.js';
import { tempDir } from '../helpers/stack.js';

t.test('key names, in order, are the operators\' contract', async (t) => {
  t.same(KEYS.map((k) => k.key), [
    'data_dir', 'http.listen', 'http.plain_listen', 'http.public_url', 'http.metrics_listen', 'http.console_session_hours',
    'http.tls.enabled', 'http.tls.cert', 'http.tls.key', 'http.tls.hsts_max_age', 'smtp.hostname', 'smtp.mx.listen', 'smtp.mx.max_message_bytes',
    'smtp.mx.greet_delay_ms', 'smtp.max_header_bytes', 'smtp.max_mime_depth', 'smtp.max_buffered_bytes', 'smtp.junk_command_limit',
    'smtp.session_deadline_minutes', 'smtp.submission.listen',
    'smtp.submission.tls_listen', 'smtp.submission.max_message_bytes', 'smtp.submission.max_connections_per_ip',
    'smtp.submission.auth_failure_delay_ms', 'smtp.submission.allow_insecure_loopback_auth', 'smtp.proxy_protocol_from', 'smtp.tls.cert', 'smtp.tls.key',
    'acme.directory_url', 'acme.email', 'acme.hostnames', 'acme.ca_file', 'dns.servers', 'dns.cache_max_entries',
    'outbound.smarthost', 'outbound.smarthost_user', 'outbound.smarthost_password', 'outbound.smarthost_tls',
    'outbound.transport_map', 'outbound.mx_port', 'outbound.public_ip', 'outbound.lockdown', 'outbound.return_path_domain', 'outbound.return_path_prefix', 'outbound.feedback_address', 'outbound.mta_sts', 'outbound.mta_sts_port', 'outbound.tls_ca_file', 'outbound.tls_reports_from', 'outbound.tls_reports_account', 'outbound.pools', 'outbound.destination_limits', 'outbound.shaping_rules', 'outbound.warmup', 'send.max_recipients',
    'send.rate_per_second', 'api.idempotency_ttl_hours', 'accounts.max_suppressions', 'accounts.max_sub_accounts', 'accounts.max_deleted_sub_accounts', 'accounts.max_tracking_domains', 'accounts.max_dkim_keys', 'security.allow_private_targets',
    'filters.spam_threshold',
    'filters.confirmed_threshold', 'filters.outbound_policy', 'filters.on_scanner_error',
    'filters.rspamd.url', 'filters.rspamd.timeout_ms', 'filters.rspamd.failure', 'filters.clamd.address',
    'filters.clamd.timeout_ms', 'filters.bayes.min_learned', 'filters.bayes.max_tokens',
    'filters.bayes.autolearn', 'filters.bayes.autolearn_spam_score', 'filters.bayes.autolearn_per_hour', 'filters.dnsbl.sites', 'filters.dnsbl.threshold',
    'filters.dnsbl.domain_sites', 'filters.dnsbl.cache_max_entries', 'abuse.block_confirmed', 'abuse.block_suspect', 'abuse.block_window_hours',
    'abuse.delist_per_day', 'abuse.invalid_recipient_rate', 'abuse.invalid_recipient_min', 'abuse.complaint_rate', 'abuse.complaint_min', 'inbound.quarantine_days', 'inbound.reports_per_account', 'inbound.list_entries_per_account',
    'inbound.digest_from', 'inbound.digest_account',
    'inbound.greylist.domains', 'inbound.greylist.delay_seconds', 'inbound.greylist.retry_window_hours',
    'inbound.greylist.new_triplets_per_network_hour', 'inbound.greylist.pass_days',
    'inbound.greylist.auto_allow_after', 'inbound.greylist.exempt_networks', 'inbound.arc.domain', 'inbound.arc.selector', 'inbound.arc.key',
    'queue.lease_seconds', 'queue.min_free_bytes',
    'retention.log_days', 'retention.message_days', 'retention.tracking_days', 'retention.alert_days', 'retention.metric_days', 'retention.dkim_key_days', 'retention.report_days',
    'retention.bayes_token_days', 'retention.bayes_learned_days', 'server.processes', 'server.cpu_threads', 'storage.backend', 'storage.postgres_url', 'storage.postgres_pool_size', 'log.level',
  ]);
  const mx = KEYS.find((k) => k.key === 'smtp.mx.max_message_bytes');
  t.same(mx?.path, ['smtp', 'mx', 'maxMessageBytes'], 'camelCase path ↔ snake_case name');
});

t.test('every key set in the environment lands at its Config path', async (t) => {
  const dir = tempDir(t);
  const env: Record<string, string> = {
    SLUICE_DATA_DIR: 'state', SLUICE_HTTP_LISTEN: '127.0.0.1:1', SLUICE_HTTP_PUBLIC_URL: 'https://mail.example.test/',
    SLUICE_HTTP_METRICS_LISTEN: '127.0.0.1:9', SLUICE_HTTP_CONSOLE_SESSION_HOURS: '2', SLUICE_HTTP_PLAIN_LISTEN: '127.0.0.1:8',
    SLUICE_HTTP_TLS_ENABLED: 'true', SLUICE_HTTP_TLS_CERT: 'hc.pem', SLUICE_HTTP_TLS_KEY: 'hk.pem', SLUICE_HTTP_TLS_HSTS_MAX_AGE: '60',
    SLUICE_SMTP_HOSTNAME: 'mx.example.test', SLUICE_SMTP_MX_LISTEN: '127.0.0.1:2', SLUICE_SMTP_MX_MAX_MESSAGE_BYTES: '2048',
    SLUICE_SMTP_MX_GREET_DELAY_MS: '7', SLUICE_SMTP_MAX_HEADER_BYTES: '4096', SLUICE_SMTP_MAX_MIME_DEPTH: '9', SLUICE_SMTP_MAX_BUFFERED_BYTES: '33554432',
    SLUICE_SMTP_JUNK_COMMAND_LIMIT: '20', SLUICE_SMTP_SESSION_DEADLINE_MINUTES: '10', SLUICE_SMTP_SUBMISSION_AUTH_FAILURE_DELAY_MS: '250',
    SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:3', SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '127.0.0.1:4',
    SLUICE_SMTP_SUBMISSION_MAX_MESSAGE_BYTES: '3072', SLUICE_SMTP_SUBMISSION_MAX_CONNECTIONS_PER_IP: '5',
    SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true', SLUICE_SMTP_PROXY_PROTOCOL_FROM: '192.0.2.7,2001:DB8::7', SLUICE_SMTP_TLS_CERT: 'c.pem', SLUICE_SMTP_TLS_KEY: 'k.pem',
    SLUICE_DNS_SERVERS: '127.0.0.1:53', SLUICE_DNS_CACHE_MAX_ENTRIES: '500', SLUICE_OUTBOUND_SMARTHOST: 'relay.test:25', SLUICE_OUTBOUND_SMARTHOST_USER: 'u',
    SLUICE_OUTBOUND_SMARTHOST_PASSWORD: 'p', SLUICE_OUTBOUND_SMARTHOST_TLS: 'implicit',
    SLUICE_OUTBOUND_TRANSPORT_MAP: 'a.test=h:26', SLUICE_OUTBOUND_MX_PORT: '2525', SLUICE_OUTBOUND_PUBLIC_IP: '192.0.2.1',
    SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_RETURN_PATH_DOMAIN: 'Bounces.Example.Test', SLUICE_OUTBOUND_RETURN_PATH_PREFIX: 'PSRP', SLUICE_OUTBOUND_FEEDBACK_ADDRESS: 'FBL@bounces.example.test', SLUICE_OUTBOUND_MTA_STS: 'on', SLUICE_OUTBOUND_MTA_STS_PORT: '8443', SLUICE_OUTBOUND_TLS_CA_FILE: 'cas.pem', SLUICE_OUTBOUND_TLS_REPORTS_FROM: 'tls@example.test', SLUICE_OUTBOUND_TLS_REPORTS_ACCOUNT: 'ops', SLUICE_OUTBOUND_POOLS: 'blue=192.0.2.10 Mta10.Example.Test+2001:db8::10 mta11.example.test', SLUICE_OUTBOUND_DESTINATION_LIMITS: '*.Outlook.Test=2:20:0', SLUICE_OUTBOUND_SHAPING_RULES: '{"ms":{"reply":"4\\\\.7\\\\.650","hosts":"*.Outlook.Test","action":"throttle","minutes":30,"rate":5}}', SLUICE_OUTBOUND_WARMUP: '{"192.0.2.10":{"start":"2026-12-01","daily":[50,100]}}', SLUICE_SEND_MAX_RECIPIENTS: '50', SLUICE_SEND_RATE_PER_SECOND: '0', SLUICE_API_IDEMPOTENCY_TTL_HOURS: '6', SLUICE_ACCOUNTS_MAX_SUPPRESSIONS: '500', SLUICE_ACCOUNTS_MAX_SUB_ACCOUNTS: '7', SLUICE_ACCOUNTS_MAX_DELETED_SUB_ACCOUNTS: '70', SLUICE_ACCOUNTS_MAX_TRACKING_DOMAINS: '8', SLUICE_ACCOUNTS_MAX_DKIM_KEYS: '9', SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '10.0.0.5/8, FD00::1:2525, [::1]:2525, 127.0.0.1',
    SLUICE_FILTERS_SPAM_THRESHOLD: '6.5', SLUICE_FILTERS_RSPAMD_URL: 'http://127.0.0.1:11333',
    SLUICE_FILTERS_RSPAMD_TIMEOUT_MS: '100', SLUICE_FILTERS_RSPAMD_FAILURE: 'accept-and-tag',
    SLUICE_FILTERS_CONFIRMED_THRESHOLD: '20', SLUICE_FILTERS_OUTBOUND_POLICY: 'monitor', SLUICE_FILTERS_ON_SCANNER_ERROR: 'accept',
    SLUICE_FILTERS_CLAMD_ADDRESS: '/run/clamav/clamd.ctl', SLUICE_FILTERS_CLAMD_TIMEOUT_MS: '200',
    SLUICE_FILTERS_BAYES_MIN_LEARNED: '7', SLUICE_FILTERS_BAYES_MAX_TOKENS: '5000', SLUICE_FILTERS_BAYES_AUTOLEARN: 'false',
    SLUICE_FILTERS_BAYES_AUTOLEARN_SPAM_SCORE: '15.5', SLUICE_FILTERS_BAYES_AUTOLEARN_PER_HOUR: '50', SLUICE_FILTERS_DNSBL_SITES: 'zen.example=127.0.0.[2..11]*3,wl.example*-2',
    SLUICE_FILTERS_DNSBL_THRESHOLD: '4', SLUICE_FILTERS_DNSBL_DOMAIN_SITES: 'dbl.example', SLUICE_FILTERS_DNSBL_CACHE_MAX_ENTRIES: '50',
    SLUICE_INBOUND_GREYLIST_DOMAINS: 'Corp.Example,*', SLUICE_INBOUND_GREYLIST_DELAY_SECONDS: '60', SLUICE_INBOUND_GREYLIST_RETRY_WINDOW_HOURS: '2',
    SLUICE_INBOUND_GREYLIST_NEW_TRIPLETS_PER_NETWORK_HOUR: '50',
    SLUICE_INBOUND_GREYLIST_PASS_DAYS: '9', SLUICE_INBOUND_GREYLIST_AUTO_ALLOW_AFTER: '3', SLUICE_INBOUND_GREYLIST_EXEMPT_NETWORKS: '192.0.2.0/24,2001:DB8::1',
    SLUICE_INBOUND_ARC_DOMAIN: 'Seal.Example.', SLUICE_INBOUND_ARC_SELECTOR: 'arc1', SLUICE_INBOUND_ARC_KEY: 'arc.pem',
    SLUICE_QUEUE_MIN_FREE_BYTES: '1048576',
    SLUICE_ABUSE_BLOCK_CONFIRMED: '4', SLUICE_ABUSE_BLOCK_SUSPECT: '11', SLUICE_ABUSE_BLOCK_WINDOW_HOURS: '12',
    SLUICE_ABUSE_DELIST_PER_DAY: '1', SLUICE_ABUSE_INVALID_RECIPIENT_RATE: '0.2', SLUICE_ABUSE_INVALID_RECIPIENT_MIN: '5',
    SLUICE_ABUSE_COMPLAINT_RATE: '0.01', SLUICE_ABUSE_COMPLAINT_MIN: '200',
    SLUICE_INBOUND_QUARANTINE_DAYS: '3', SLUICE_QUEUE_LEASE_SECONDS: '30', SLUICE_RETENTION_LOG_DAYS: '4', SLUICE_RETENTION_MESSAGE_DAYS: '2',
    SLUICE_RETENTION_TRACKING_DAYS: '90', SLUICE_RETENTION_ALERT_DAYS: '60', SLUICE_LOG_LEVEL: 'warn', SLUICE_SERVER_PROCESSES: '3', SLUICE_SERVER_CPU_THREADS: '2', SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: 'postgres://u:p@db.test/sluice?sslmode=require', SLUICE_STORAGE_POSTGRES_POOL_SIZE: '7',
    SLUICE_INBOUND_REPORTS_PER_ACCOUNT: '20', SLUICE_INBOUND_LIST_ENTRIES_PER_ACCOUNT: '30', SLUICE_INBOUND_DIGEST_FROM: 'digests@ops.example.test', SLUICE_INBOUND_DIGEST_ACCOUNT: 'ops', SLUICE_RETENTION_METRIC_DAYS: '13', SLUICE_RETENTION_DKIM_KEY_DAYS: '14', SLUICE_RETENTION_REPORT_DAYS: '10', SLUICE_RETENTION_BAYES_TOKEN_DAYS: '11',
    SLUICE_RETENTION_BAYES_LEARNED_DAYS: '12',
  };
  // ACME and smtp.tls.cert exclude each other: the acme.* keys are set in a second load below.
  const acmeEnv = {
    SLUICE_ACME_DIRECTORY_URL: 'https://ca.example.test/dir', SLUICE_ACME_EMAIL: 'pm@example.test',
    SLUICE_ACME_HOSTNAMES: 'Links.Example.Test,b.example.test', SLUICE_ACME_CA_FILE: 'ca.pem',
  };
  t.equal(Object.keys(env).length + Object.keys(acmeEnv).length, KEYS.length, 'one variable per key');
  t.same(loadConfig({ env: acmeEnv, cwd: dir }).config.acme, {
    directoryUrl: 'https://ca.example.test/dir', email: 'pm@example.test', hostnames: ['links.example.test', 'b.example.test'],
    caFile: path.join(dir, 'ca.pem'),
  });
  const { config } = loadConfig({ env, cwd: dir });
  t.same(config, {
    dataDir: path.join(dir, 'state'),
    http: {
      listen: { host: '127.0.0.1', port: 1 }, plainListen: { host: '127.0.0.1', port: 8 }, publicUrl: 'https://mail.example.test',
      metricsListen: { host: '127.0.0.1', port: 9 }, consoleSessionHours: 2,
      tls: { enabled: true, cert: path.join(dir, 'hc.pem'), key: path.join(dir, 'hk.pem'), hstsMaxAge: 60 },
    },
    smtp: {
      hostname: 'mx.example.test',
      mx: { listen: { host: '127.0.0.1', port: 2 }, maxMessageBytes: 2048, greetDelayMs: 7 },
      maxHeaderBytes: 4096,
      maxMimeDepth: 9,
      maxBufferedBytes: 33_554_432,
      junkCommandLimit: 20,
      sessionDeadlineMinutes: 10,
      submission: {
        listen: { host: '127.0.0.1', port: 3 }, tlsListen: { host: '127.0.0.1', port: 4 }, maxMessageBytes: 3072,
        maxConnectionsPerIp: 5, authFailureDelayMs: 250, allowInsecureLoopbackAuth: true,
      },
      proxyProtocolFrom: ['192.0.2.7', '2001:db8::7'],
      tls: { cert: path.join(dir, 'c.pem'), key: path.join(dir, 'k.pem') },
    },
    acme: { hostnames: [] },
    dns: { servers: [{ host: '127.0.0.1', port: 53 }], cacheMaxEntries: 500 },
    outbound: {
      smarthost: { host: 'relay.test', port: 25 }, smarthostUser: 'u', smarthostPassword: 'p', smarthostTls: 'implicit',
      transportMap: { 'a.test': { host: 'h', port: 26 } }, mxPort: 2525, publicIp: '192.0.2.1', lockdown: 'off',
      returnPathDomain: 'bounces.example.test', returnPathPrefix: 'psrp', feedbackAddress: 'fbl@bounces.example.test',
      mtaSts: 'on', mtaStsPort: 8443, tlsCaFile: path.join(dir, 'cas.pem'), tlsReportsFrom: 'tls@example.test', tlsReportsAccount: 'ops',
      pools: { blue: [{ address: '192.0.2.10', ehlo: 'mta10.example.test' }, { address: '2001:db8::10', ehlo: 'mta11.example.test' }] },
      destinationLimits: { '*.outlook.test': { connections: 2, messagesPerConnection: 20, messagesPerMinute: 0 } },
      shapingRules: { ms: { reply: /4\.7\.650/i, hosts: '*.outlook.test', action: 'throttle', minutes: 30, rate: 5 } },
      warmup: { '192.0.2.10': { start: Date.UTC(2026, 11, 1), daily: [50, 100] } },
    },
    send: { maxRecipients: 50, ratePerSecond: 0 },
    api: { idempotencyTtlHours: 6 },
    accounts: { maxSuppressions: 500, maxSubAccounts: 7, maxDeletedSubAccounts: 70, maxTrackingDomains: 8, maxDkimKeys: 9 },
    // Each entry in its canonical form: a bare address is a /32 or /128; fd00::1:2525 is an IPv6 address, not a port.
    security: { allowPrivateTargets: ['10.0.0.5/8', 'fd00::1:2525/128', '[::1]:2525', '127.0.0.1/32'] },
    filters: {
      spamThreshold: 6.5, confirmedThreshold: 20, outboundPolicy: 'monitor', onScannerError: 'accept',
      rspamd: { url: 'http://127.0.0.1:11333', timeoutMs: 100, failure: 'accept-and-tag' },
      clamd: { address: '/run/clamav/clamd.ctl', timeoutMs: 200 },
      bayes: { minLearned: 7, maxTokens: 5000, autolearn: false, autolearnSpamScore: 15.5, autolearnPerHour: 50 },
      dnsbl: {
        sites: [
          { zone: 'zen.example', octets: [[[127, 127]], [[0, 0]], [[0, 0]], [[2, 11]]], weight: 3 },
          { zone: 'wl.example', octets: null, weight: -2 },
        ],
        threshold: 4,
        domainSites: [{ zone: 'dbl.example', octets: null, weight: 1 }],
        cacheMaxEntries: 50,
      },
    },
    abuse: {
      blockConfirmed: 4, blockSuspect: 11, blockWindowHours: 12, delistPerDay: 1, invalidRecipientRate: 0.2,
      invalidRecipientMin: 5, complaintRate: 0.01, complaintMin: 200,
    },
    inbound: {
      quarantineDays: 3,
      reportsPerAccount: 20,
      listEntriesPerAccount: 30,
      digestFrom: 'digests@ops.example.test',
      digestAccount: 'ops',
      greylist: {
        domains: ['corp.example', '*'], delaySeconds: 60, retryWindowHours: 2, newTripletsPerNetworkHour: 50, passDays: 9, autoAllowAfter: 3,
        exemptNetworks: ['192.0.2.0/24', '2001:db8::1/128'],
      },
      arc: { domain: 'seal.example', selector: 'arc1', key: path.join(dir, 'arc.pem') },
    },
    queue: { leaseSeconds: 30, minFreeBytes: 1_048_576 },
    retention: { logDays: 4, messageDays: 2, trackingDays: 90, alertDays: 60, metricDays: 13, dkimKeyDays: 14, reportDays: 10, bayesTokenDays: 11, bayesLearnedDays: 12 },
    server: { processes: 3, cpuThreads: 2 },
    storage: { backend: 'postgres', postgresUrl: 'postgres://u:p@db.test/sluice?sslmode=require', postgresPoolSize: 7 },
    log: { level: 'warn' },
  });
});

t.test('http.metrics_listen: loopback by default, "" serves /metrics on http.listen', async (t) => {
  t.same(loadConfig({ env: {}, cwd: tempDir(t) }).config.http.metricsListen, { host: '127.0.0.1', port: 9464 });
  t.equal(loadConfig({ env: { SLUICE_HTTP_METRICS_LISTEN: '' }, cwd: tempDir(t) }).config.http.metricsListen, undefined);
  t.throws(() => loadConfig({ env: { SLUICE_HTTP_METRICS_LISTEN: 'nope' }, cwd: tempDir(t) }), /http\.metrics_listen/);
});

t.test('the 30 MB limit is the default of both listeners', async (t) => {
  t.equal(MAX_MESSAGE_BYTES, 31_457_280);
  const { config } = loadConfig({ env: {}, cwd: tempDir(t) });
  t.equal(config.smtp.mx.maxMessageBytes, MAX_MESSAGE_BYTES);
  t.equal(config.smtp.submission.maxMessageBytes, MAX_MESSAGE_BYTES);
});

t.test('scanner and abuse keys refuse bad values, naming the key', async (t) => {
  const cwd = tempDir(t);
  t.throws(() => loadConfig({ env: { SLUICE_FILTERS_CLAMD_ADDRESS: 'clamd' }, cwd }), {
    message: /^filters\.clamd\.address: "clamd" is neither host:port nor an absolute unix socket path/,
  });
  t.throws(() => loadConfig({ env: { SLUICE_ABUSE_INVALID_RECIPIENT_RATE: '1.5' }, cwd }), { message: /^abuse\.invalid_recipient_rate: expected a fraction/ });
  t.throws(() => loadConfig({ env: { SLUICE_ABUSE_COMPLAINT_RATE: '0' }, cwd }), { message: /^abuse\.complaint_rate: / });
  t.match(loadConfig({ env: {}, cwd }).config.abuse, { complaintRate: 0.003, complaintMin: 1000 }, 'complaint alert defaults: 0.3 % of 1000');
  t.throws(() => loadConfig({ env: { SLUICE_FILTERS_OUTBOUND_POLICY: 'strict' }, cwd }), { message: /^filters\.outbound_policy: "strict" is not one of enforce, monitor, off/ });
  const { config } = loadConfig({ env: { SLUICE_FILTERS_CLAMD_ADDRESS: '127.0.0.1:3310' }, cwd });
  t.equal(config.filters.clamd.address, '127.0.0.1:3310');
  t.equal(loadConfig({ env: {}, cwd }).config.filters.clamd.address, undefined, 'clamd is off by default');
});
