// Owns Sluice's Prometheus metric families (prom-client) on a registry of their own: names, types, labels, and the
// scrape-time gauges read from storage. Each family is fed from the one place its events happen (see each field).
import { X509Certificate } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import {
  ATTEMPT_OUTCOMES, AUTOLEARN_OUTCOMES, BAYES_CLASSES, DNS_RESULTS, DNS_TYPES, FINAL_OUTCOMES, INBOUND_ACTIONS, MESSAGE_KINDS,
  QUEUE_STATES, REPORT_RESULTS, SCAN_DISPOSITIONS, WEBHOOK_STATUSES,
} from './metrics-labels.js';

/** What a scrape reads from storage: unfinished deliveries by state and kind, and the pending webhook events. */
export interface MetricSources {
  /**
   * Deliveries not yet finished, counted by state (queued, sending, held) and message kind (outbound, relay, dsn),
   * and the created_at (ms) of the oldest message with a queued or sending delivery, if any.
   */
  queue: () => Promise<{ rows: { state: string; kind: string; count: number }[]; oldestQueuedAt: number | undefined }>;
  /** Events waiting for their first POST to an enrolled webhook. */
  webhookEventsPending: () => Promise<number>;
  /** Shaping activations in force (outbound.shaping_rules), by action. */
  shapingActive?: () => Promise<{ suspend: number; throttle: number }>;
  /** The configured outbound.shaping_rules (live): each rule's activation counter starts at 0. */
  shapingRules?: () => Readonly<Record<string, { action: string }>>;
  now: () => number;
}

/** What createMetrics is told about the process it runs in. */
export interface MetricsOptions {
  /** Sluice's version, for sluice_build_info. */
  version?: string;
  /**
   * The process's slot in a `server.processes` tree (bin/supervisor.ts), as the `process` label of prom-client's
   * default process_* and nodejs_* metrics: the tree's exposition sums the children's families, and a sum of heap
   * sizes, file descriptor limits or start times means nothing, so each child keeps a series of its own. Unset in a
   * single process: no label.
   */
  process?: string;
}

/** The reply class label of an SMTP reply code: `2xx`, `3xx`, `4xx`, `5xx`. */
export function replyClass(code: number): string {
  return `${Math.floor(code / 100)}xx`;
}

/**
 * The bounce class of an attempt (low cardinality, never the text): the RFC 3463 class and subject of its status
 * (`5.1`, `4.4`, `5.7`), `none` when it has no status (delivered, or a reply without one).
 */
export function bounceClass(status: string | null): string {
  const m = status === null ? null : /^([245])\.(\d{1,3})\./.exec(status);
  return m ? `${m[1]}.${m[2]}` : 'none';
}

// Latencies of local work (a commit, an event loop turn): 100 µs to 10 s.
const LOCAL_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
// Webhook dispatch lag: from an event's creation to its first POST, 10 ms to a day (retries wait hours).
const LAG_BUCKETS = [0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400];
// An HTTP answer or an SMTP reply: 1 ms to a minute (a DATA phase of a large message over a slow link takes long).
const REPLY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
// From a message's acceptance to its delivery or bounce: 100 ms to the 5 days of a queue lifetime.
const DELIVERY_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400, 43_200, 86_400, 259_200, 432_000];

/** The subjectAltName DNS names of a PEM certificate (its first), or its subject CN, and its notAfter in seconds. */
function certificateNames(pem: string): { names: string[]; notAfter: number } {
  const x = new X509Certificate(pem);
  const names = (x.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(x.subject)?.[1];
  return { names: names.length > 0 ? names : [cn ?? ''], notAfter: Date.parse(x.validTo) / 1000 };
}

/**
 * Creates the metric families on a fresh registry (no prom-client global; two servers in one test process keep
 * their own counts). `collectFrom` sets the storage sources read at each scrape; `close()` stops the event-loop
 * monitor.
 */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  const registers = [registry];
  let sources: MetricSources | undefined;
  // The certificates the listeners present now (bin/server.ts registers each TLS source), parsed once per change.
  const certificates = new Map<string, { current: () => string; pem?: string; parsed?: ReturnType<typeof certificateNames> }>();
  let gather: (() => Promise<string>) | undefined;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();

  const metrics = {
    registry,
    /** Fed by the SMTP listener seam on every accepted connection (mta/smtp/smtp-server-seam.ts). */
    smtpSessions: new Counter({
      name: 'sluice_smtp_sessions_total',
      help: 'SMTP sessions accepted, by listener (mx, submission, submission_tls).',
      labelNames: ['listener'] as const,
      registers,
    }),
    /** Fed by the seam's one send override: every reply our listeners write, by listener and reply class. */
    smtpReplies: new Counter({
      name: 'sluice_smtp_replies_total',
      help: 'SMTP replies written by our listeners, by listener and reply class (2xx, 3xx, 4xx, 5xx).',
      labelNames: ['listener', 'class'] as const,
      registers,
    }),
    /** Fed where an attempt's outcome is recorded (mta/queue/queue.ts record()). */
    deliveryAttempts: new Counter({
      name: 'sluice_delivery_attempts_total',
      help: 'Delivery attempts recorded, by message kind, outcome (delivered, deferred, bounced) and bounce class (RFC 3463 class.subject, or none).',
      labelNames: ['kind', 'outcome', 'bounce_class'] as const,
      registers,
    }),
    /** Fed by the inbound pipeline's one policy step, per recipient. */
    inboundVerdicts: new Counter({
      name: 'sluice_inbound_verdicts_total',
      help: 'Inbound recipients by the action the policy step took (relay, flag, quarantine, block, tempfail).',
      labelNames: ['action'] as const,
      registers,
    }),
    /** Fed by the classifier's own learning (mta/inbound/autolearn.ts), per recipient account of a certain message. */
    bayesAutolearned: new Counter({
      name: 'sluice_bayes_autolearned_total',
      help: 'Inbound messages the classifier learned by itself (filters.bayes.autolearn), by class and outcome (learned, relearned, already, over_hourly_bound, failed).',
      labelNames: ['class', 'outcome'] as const,
      registers,
    }),
    /** Fed by the reports that come back to the return path and feedback address (mta/queue/feedback.ts). */
    reportsReceived: new Counter({
      name: 'sluice_reports_received_total',
      help: 'Reports that came back to outbound.return_path_domain or outbound.feedback_address, by kind (dsn, text-bounce, arf, none) and result (bounced, delayed, complained, repeated, ignored, unmatched).',
      labelNames: ['kind', 'result'] as const,
      registers,
    }),
    /** Fed by shaping that listens (mta/delivery/shaping.ts) each time a rule acts on a reply. */
    shapingActivations: new Counter({
      name: 'sluice_shaping_activations_total',
      help: 'Times an outbound.shaping_rules rule acted on a remote reply, by rule and action (suspend, throttle, bounce).',
      labelNames: ['rule', 'action'] as const,
      registers,
      collect() {
        // Each configured rule's series from the start (rules come and go with a reload; a removed one keeps its count).
        for (const [rule, r] of Object.entries(sources?.shapingRules?.() ?? {})) this.inc({ rule, action: r.action }, 0);
      },
    }),
    shapingActive: new Gauge({
      name: 'sluice_shaping_active',
      // Read from the store every process shares, like the queue's gauges.
      aggregator: 'first',
      help: 'Shaping activations in force now (a sending address suspended or throttled for a provider), by action.',
      labelNames: ['action'] as const,
      registers,
      async collect() {
        const n = (await sources?.shapingActive?.()) ?? { suspend: 0, throttle: 0 };
        this.set({ action: 'suspend' }, n.suspend);
        this.set({ action: 'throttle' }, n.throttle);
      },
    }),
    /** Fed by outbound screening (mta/outbound/screening.ts) with each scanned message's verdict, refused ones too. */
    outboundScanDispositions: new Counter({
      name: 'sluice_outbound_scan_dispositions_total',
      help: 'Outbound messages scanned, by scanner (spam, virus) and the disposition of its verdict (unknown: clean or not scanned).',
      labelNames: ['scanner', 'disposition'] as const,
      registers,
    }),
    /** Fed by the webhook dispatcher after each POST. */
    webhookBatches: new Counter({
      name: 'sluice_webhook_batches_total',
      help: 'Webhook batch POSTs, by result status (2xx_response, 4xx_response, 5xx_response, timeout, …).',
      labelNames: ['status'] as const,
      registers,
    }),
    webhookDispatchLag: new Histogram({
      name: 'sluice_webhook_dispatch_lag_seconds',
      help: 'Age of the oldest event of a batch at its first POST.',
      buckets: LAG_BUCKETS,
      registers,
    }),
    /** Fed by the buffer governor (bin/buffer-governor.ts) of `sluice serve`. */
    bufferScavenges: new Counter({
      name: 'sluice_buffer_scavenges_total',
      help: 'Young-generation collections the buffer governor ran because the bytes behind Buffers grew by 16 MB.',
      registers,
    }),
    /** Fed by the idle trimmer (bin/idle-trim.ts) of `sluice serve`. */
    idleCollections: new Counter({
      name: 'sluice_idle_collections_total',
      help: 'Memory-reducing collections run because the process was at rest and its heap had grown by 8 MB since the last one.',
      registers,
    }),
    /** Fed by the HTTP app's outermost middleware (as httpRequests): the time to the answer's status, by method, route template and status class. */
    httpDuration: new Histogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'Time from an HTTP request to its answer (the body of a streamed answer not included), by method, route template and status class.',
      labelNames: ['method', 'route', 'status_class'] as const,
      buckets: REPLY_BUCKETS,
      registers,
    }),
    /** Fed by the SMTP listener seam (mta/smtp/smtp-server-seam.ts): from a command line to its reply. */
    smtpCommandDuration: new Histogram({
      name: 'sluice_smtp_command_duration_seconds',
      help: 'Time from an SMTP command to our reply, by listener and command (message: the DATA phase from the 354 to the reply after the final dot).',
      labelNames: ['listener', 'command'] as const,
      buckets: REPLY_BUCKETS,
      registers,
    }),
    /** Fed where an attempt's outcome is recorded (mta/queue/queue.ts record()) when it ends the delivery. */
    deliveryDuration: new Histogram({
      name: 'sluice_delivery_duration_seconds',
      help: 'Time from a message\'s acceptance into the queue to the final outcome of a delivery (delivered, bounced), by message kind.',
      labelNames: ['kind', 'outcome'] as const,
      buckets: DELIVERY_BUCKETS,
      registers,
    }),
    buildInfo: new Gauge({
      name: 'sluice_build_info',
      // The same in every process of a tree.
      aggregator: 'first',
      help: 'Always 1; the labels say which Sluice (version) runs on which Node.js (node). Exported by every role.',
      labelNames: ['version', 'node'] as const,
      registers,
    }),
    tlsCertificateExpiry: new Gauge({
      name: 'sluice_tls_certificate_expiry_timestamp_seconds',
      // Every process of a tree reads the same pair; during a renewal the older one is the one to worry about.
      aggregator: 'min',
      help: 'When the certificate a TLS listener presents expires (notAfter, Unix seconds), by listener (smtp, https) and DNS name.',
      labelNames: ['listener', 'name'] as const,
      registers,
      collect() {
        this.reset();
        for (const [listener, c] of certificates) {
          const pem = c.current();
          if (pem !== c.pem) {
            c.pem = pem;
            c.parsed = certificateNames(pem);
          }
          for (const name of c.parsed!.names) this.set({ listener, name }, c.parsed!.notAfter);
        }
      },
    }),
    /** Fed by the HTTP app's outermost middleware with the matched route template (never the raw path). */
    httpRequests: new Counter({
      name: 'sluice_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status code.',
      labelNames: ['method', 'route', 'status'] as const,
      registers,
    }),
    /** Fed by the process's one DNS cache (mta/delivery/dns-cache.ts), once per look-up. */
    dnsLookups: new Counter({
      name: 'sluice_dns_lookups_total',
      help: 'DNS look-ups by record type and how the cache answered: hit (from the cache), shared (joined an identical look-up in flight), miss (asked a server).',
      labelNames: ['type', 'result'] as const,
      registers,
    }),
    /** Fed by the SQLite store's group commit around its one write transaction (COMMIT includes the fsync). */
    sqliteCommit: new Histogram({
      name: 'sluice_sqlite_commit_duration_seconds',
      help: 'Duration of the SQLite store\'s group-commit write transactions, COMMIT and fsync included.',
      buckets: LOCAL_BUCKETS,
      registers,
    }),
    queueDeliveries: new Gauge({
      name: 'sluice_queue_deliveries',
      // Read from the store every process shares: a tree's sum would count it once per process (bin/supervisor.ts).
      aggregator: 'first',
      help: 'Unfinished deliveries in the queue, by state (queued, sending, held) and message kind (outbound, relay, dsn).',
      labelNames: ['state', 'kind'] as const,
      registers,
      async collect() {
        const rows = (await sources?.queue())?.rows ?? [];
        this.reset();
        for (const state of QUEUE_STATES) for (const kind of MESSAGE_KINDS) this.set({ state, kind }, 0);
        for (const r of rows) this.set({ state: r.state, kind: r.kind }, r.count);
      },
    }),
    queueOldest: new Gauge({
      name: 'sluice_queue_oldest_message_age_seconds',
      // Read from the store every process shares: a tree's sum would count it once per process (bin/supervisor.ts).
      aggregator: 'first',
      help: 'Age of the oldest message with a queued or sending delivery; 0 when the queue is empty.',
      registers,
      async collect() {
        const at = (await sources?.queue())?.oldestQueuedAt;
        this.set(at === undefined || !sources ? 0 : Math.max(0, (sources.now() - at) / 1000));
      },
    }),
    webhookPending: new Gauge({
      name: 'sluice_webhook_events_pending',
      // Read from the store every process shares: a tree's sum would count it once per process (bin/supervisor.ts).
      aggregator: 'first',
      help: 'Events waiting for their first POST to an enrolled webhook.',
      registers,
      async collect() {
        this.set((await sources?.webhookEventsPending()) ?? 0);
      },
    }),
    eventLoopLag: new Gauge({
      name: 'sluice_event_loop_lag_seconds',
      // Of a process tree, the slowest loop (bin/supervisor.ts).
      aggregator: 'max',
      help: 'Event-loop delay since the previous scrape (perf_hooks.monitorEventLoopDelay), by quantile (0.5, 0.99, 1 = max).',
      labelNames: ['quantile'] as const,
      registers,
      collect() {
        // Values are nanoseconds; an interval with no sample reports 0 rather than NaN.
        const s = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0);
        this.set({ quantile: '0.5' }, s(loop.percentile(50)));
        this.set({ quantile: '0.99' }, s(loop.percentile(99)));
        this.set({ quantile: '1' }, s(loop.max));
        loop.reset();
      },
    }),
    /**
     * Adds the certificate a TLS listener presents (`current`: its PEM now) to sluice_tls_certificate_expiry_*; read
     * at each scrape, so a renewed certificate shows at once.
     */
    watchCertificate(listener: 'smtp' | 'https', current: () => string): void {
      certificates.set(listener, { current });
    },
    /** Sets what scrape-time gauges read (wired in bin/ once storage is open). */
    collectFrom(s: MetricSources): void {
      sources = s;
    },
    /**
     * Sets where the exposition comes from instead of this registry alone: a serving child of a process tree asks
     * its primary for every child's figures (bin/tree-messages.ts); if that fails, this process's own are served.
     */
    gatherFrom(fn: () => Promise<string>): void {
      gather = fn;
    },
    /** The text exposition (Prometheus 0.0.4) and its content type. */
    async exposition(): Promise<{ contentType: string; text: string }> {
      const text = gather ? await gather().catch(() => registry.metrics()) : await registry.metrics();
      return { contentType: registry.contentType, text };
    },
    close(): void {
      loop.disable();
    },
  };
  metrics.buildInfo.set({ version: options.version ?? 'unknown', node: process.versions.node }, 1);
  zeroKnownSeries(metrics);
  // prom-client's process_* and nodejs_* families (CPU, memory, file descriptors, GC, event loop, handles).
  collectDefaultMetrics({ register: registry, ...(options.process === undefined ? {} : { labels: { process: options.process } }) });
  if (options.process !== undefined) {
    // prom-client omits the start time from a cluster's sum; with a `process` label each child's series stands alone.
    const start = registry.getSingleMetric('process_start_time_seconds') as { aggregator?: string } | undefined;
    if (start) start.aggregator = 'first';
  }
  return metrics;
}

/**
 * Gives every labelled counter a 0 series for each label set it is known to take (the listeners' own families start
 * theirs when a listener starts: mta/smtp/listener.ts; HTTP's label sets are routes × statuses, started by the first
 * answer), and the delivery latency a series per kind and final outcome.
 */
function zeroKnownSeries(m: Metrics): void {
  for (const kind of MESSAGE_KINDS) {
    for (const outcome of ATTEMPT_OUTCOMES) m.deliveryAttempts.inc({ kind, outcome, bounce_class: 'none' }, 0);
    for (const outcome of FINAL_OUTCOMES) m.deliveryDuration.zero({ kind, outcome });
  }
  for (const action of INBOUND_ACTIONS) m.inboundVerdicts.inc({ action }, 0);
  for (const cls of BAYES_CLASSES) for (const outcome of AUTOLEARN_OUTCOMES) m.bayesAutolearned.inc({ class: cls, outcome }, 0);
  for (const [kind, results] of Object.entries(REPORT_RESULTS)) for (const result of results) m.reportsReceived.inc({ kind, result }, 0);
  for (const [scanner, ds] of Object.entries(SCAN_DISPOSITIONS)) for (const disposition of ds) m.outboundScanDispositions.inc({ scanner, disposition }, 0);
  for (const status of WEBHOOK_STATUSES) m.webhookBatches.inc({ status }, 0);
  for (const type of DNS_TYPES) for (const result of DNS_RESULTS) m.dnsLookups.inc({ type, result }, 0);
}

export type Metrics = ReturnType<typeof createMetrics>;
