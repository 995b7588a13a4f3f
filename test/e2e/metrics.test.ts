// Checks GET /metrics end to end: after mail in both directions, a webhook batch and API calls, every family the
// issue lists is in the exposition with its type and labels (parsed back with prom-client's own parser round-trip),
// is non-zero, and carries no recipient, message id or raw path; prom-client's process_*/nodejs_* families, build
// info, certificate expiry and the latency histograms; a fresh server's zero series. Also: loopback listener vs http.listen.
import crypto from 'node:crypto';
import fs from 'node:fs';
import nodemailer from 'nodemailer';
import t from 'tap';
import { GTUBE } from '../../filters/spam-rules.js';
import { startSink } from '../helpers/smtp-sink.js';
import { onBackends } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

interface Sample {
  labels: Record<string, string>;
  value: number;
}
interface Family {
  type: string;
  help: string;
  samples: Map<string, Sample[]>;
}

/**
 * A parser of the Prometheus text format 0.0.4 (HELP, TYPE, samples with escaped label values), strict: any line it
 * does not understand fails the test rather than being skipped.
 */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (sample: string) => {
    for (const name of [sample, sample.replace(/_(bucket|sum|count)$/, '')]) if (families.has(name)) return families.get(name)!;
    throw new Error(`sample ${sample} has no TYPE line before it`);
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      families.set(m[1]!, { type: '', help: m[2]!, samples: new Map() });
      continue;
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      families.get(m[1]!)!.type = m[2]!;
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
    const body = m[2] ?? '';
    let lm: RegExpExecArray | null;
    let consumed = 0;
    while ((lm = labelRe.exec(body))) {
      labels[lm[1]!] = lm[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed = labelRe.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`bad labels: ${line}`);
    // NaN is a value of the format (prom-client's event-loop mean between two scrapes closer than its resolution).
    const value = m[3] === '+Inf' ? Infinity : Number(m[3]);
    if (Number.isNaN(value) && !/^nan$/i.test(m[3]!)) throw new Error(`bad value: ${line}`);
    const fam = familyOf(m[1]!);
    const list = fam.samples.get(m[1]!) ?? [];
    list.push({ labels, value });
    fam.samples.set(m[1]!, list);
  }
  return families;
}

async function scrape(stack: PortStack): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`http://127.0.0.1:${stack.metrics!.port}/metrics`);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const total = (f: Family | undefined, name: string, where: Record<string, string> = {}) =>
  (f?.samples.get(name) ?? []).filter((s) => Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);

// The queue gauges, pending events and dispatch lag are read from the store: the flow runs on each backend.
onBackends('every family after an end-to-end flow: names, types, labels, non-zero', async (t, backend) => {
  const sink = await startSink(t, { onRcpt: (rcpt) => (rcpt.startsWith('later@') ? { code: 451, message: '4.2.0 try later' } : undefined) });
  const stack = await startStack(t, {
    backend,
    env: {
      SLUICE_OUTBOUND_LOCKDOWN: 'off',
      SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}`,
    },
  });
  const acct = await stack.createAccount('acme');
  const inboundKey = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!inboundKey.ok) throw new Error('key');
  const receiver = await startReceiver(t);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: acct.key })).status, 201);

  // Outbound: one recipient delivered, one deferred.
  const sent = await stack.api('POST', '/tx/v1/send-async', {
    key: acct.key,
    body: {
      personalizations: [{ to: [{ email: 'bob@rcpt.test' }, { email: 'later@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'metrics',
      content: [{ type: 'text/plain', value: 'hi' }],
    },
  });
  t.equal(sent.status, 202);
  // A message the outbound scan refuses (GTUBE is CONFIRMED spam): its verdict is counted too.
  const refused = await stack.api('POST', '/tx/v1/send-async', {
    key: acct.key,
    body: {
      personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'spam',
      content: [{ type: 'text/plain', value: `hi ${GTUBE}` }],
    },
  });
  t.equal(refused.status, 403);
  // Inbound: a provisioned domain relayed to the sink.
  const prov = await stack.api('POST', '/inbound/v1/domains', {
    key: inboundKey.value.key,
    body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
  });
  t.equal(prov.status, 201);
  const mx = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.test' });
  await mx.sendMail({
    envelope: { from: 'alice@sender.test', to: ['carol@corp.test'] },
    raw: 'From: alice@sender.test\r\nTo: carol@corp.test\r\nSubject: hi\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <m1@sender.test>\r\n\r\nhello\r\n',
  });
  mx.close();
  stack.clock.advance(90_000);

  // Before delivery: the queue and the pending events are non-empty.
  const before = parseExposition((await scrape(stack)).text);
  t.ok(total(before.get('sluice_queue_deliveries'), 'sluice_queue_deliveries', { state: 'queued', kind: 'outbound' }) >= 2);
  t.ok(total(before.get('sluice_queue_deliveries'), 'sluice_queue_deliveries', { state: 'queued', kind: 'relay' }) >= 1);
  t.equal(total(before.get('sluice_queue_oldest_message_age_seconds'), 'sluice_queue_oldest_message_age_seconds'), 90, 'age by the injected clock');
  t.ok(total(before.get('sluice_webhook_events_pending'), 'sluice_webhook_events_pending') > 0);

  await stack.worker.runOnce();
  await sink.waitFor(2);
  stack.clock.advance(1000);
  await stack.webhookDispatcher.runOnce();
  t.ok(receiver.posts.length > 0);

  const res = await scrape(stack);
  t.equal(res.status, 200);
  t.match(res.type, /^text\/plain; version=0\.0\.4/);
  const fams = parseExposition(res.text);
  const expected: [string, string, string[]][] = [
    ['sluice_queue_deliveries', 'gauge', ['state', 'kind']],
    ['sluice_queue_oldest_message_age_seconds', 'gauge', []],
    ['sluice_delivery_attempts_total', 'counter', ['kind', 'outcome', 'bounce_class']],
    ['sluice_smtp_sessions_total', 'counter', ['listener']],
    ['sluice_smtp_replies_total', 'counter', ['listener', 'class']],
    ['sluice_inbound_verdicts_total', 'counter', ['action']],
    ['sluice_bayes_autolearned_total', 'counter', ['class', 'outcome']],
    ['sluice_outbound_scan_dispositions_total', 'counter', ['scanner', 'disposition']],
    ['sluice_reports_received_total', 'counter', ['kind', 'result']],
    ['sluice_shaping_activations_total', 'counter', ['rule', 'action']],
    ['sluice_shaping_active', 'gauge', ['action']],
    ['sluice_webhook_events_pending', 'gauge', []],
    ['sluice_webhook_batches_total', 'counter', ['status']],
    ['sluice_webhook_dispatch_lag_seconds', 'histogram', ['le']],
    ['sluice_http_requests_total', 'counter', ['method', 'route', 'status']],
    ['sluice_sqlite_commit_duration_seconds', 'histogram', ['le']],
    ['sluice_event_loop_lag_seconds', 'gauge', ['quantile']],
    ['sluice_dns_lookups_total', 'counter', ['type', 'result']],
    ['sluice_buffer_scavenges_total', 'counter', []],
    ['sluice_idle_collections_total', 'counter', []],
    ['sluice_http_request_duration_seconds', 'histogram', ['method', 'route', 'status_class', 'le']],
    ['sluice_smtp_command_duration_seconds', 'histogram', ['listener', 'command', 'le']],
    ['sluice_delivery_duration_seconds', 'histogram', ['kind', 'outcome', 'le']],
    ['sluice_build_info', 'gauge', ['version', 'node']],
    ['sluice_tls_certificate_expiry_timestamp_seconds', 'gauge', ['listener', 'name']],
  ];
  const ours = [...fams.keys()].filter((n) => n.startsWith('sluice_'));
  t.same(ours.sort(), expected.map((e) => e[0]).sort(), 'exactly the documented sluice_* families');
  // prom-client's default families, as Prometheus users expect them (one process: no `process` label).
  for (const [name, type] of [
    ['process_cpu_seconds_total', 'counter'], ['process_resident_memory_bytes', 'gauge'], ['process_start_time_seconds', 'gauge'],
    ['process_open_fds', 'gauge'], ['nodejs_heap_size_used_bytes', 'gauge'], ['nodejs_eventloop_lag_p99_seconds', 'gauge'],
    ['nodejs_gc_duration_seconds', 'histogram'], ['nodejs_version_info', 'gauge'],
  ] as const) {
    t.equal(fams.get(name)?.type, type, `${name} is a ${type}`);
    t.notOk((fams.get(name)?.samples.get(name) ?? []).some((s) => 'process' in s.labels), `${name}: no process label in a single process`);
  }
  t.ok(total(fams.get('process_resident_memory_bytes'), 'process_resident_memory_bytes') > 1e6, 'resident memory is measured');
  t.same(fams.get('sluice_build_info')!.samples.get('sluice_build_info'), [{ labels: { version: '0.1.0', node: process.versions.node }, value: 1 }]);
  // Latency histograms: by route template and status class, by listener and command, by kind and final outcome.
  nonZeroCount('sluice_http_request_duration_seconds', { method: 'POST', route: '/tx/v1/send-async', status_class: '2xx' });
  t.equal(total(fams.get('sluice_http_request_duration_seconds'), 'sluice_http_request_duration_seconds_count', { route: '/tx/v1/send-async' }), 2, 'both sends, one series per status class');
  for (const command of ['EHLO', 'MAIL', 'RCPT', 'DATA', 'message']) nonZeroCount('sluice_smtp_command_duration_seconds', { listener: 'mx', command });
  t.equal(total(fams.get('sluice_smtp_command_duration_seconds'), 'sluice_smtp_command_duration_seconds_count', { listener: 'mx', command: 'RCPT' }), 1, 'one RCPT');
  // Accepted, then delivered 90 s later by the injected clock: the deferred recipient has no final outcome yet.
  const delivery = (where: Record<string, string>, part: string) => total(fams.get('sluice_delivery_duration_seconds'), `sluice_delivery_duration_seconds_${part}`, where);
  t.equal(delivery({ kind: 'outbound', outcome: 'delivered' }, 'count'), 1);
  t.equal(delivery({ kind: 'outbound', outcome: 'delivered' }, 'sum'), 90, 'from acceptance to delivery by the injected clock');
  t.equal(delivery({ kind: 'outbound', outcome: 'bounced' }, 'count'), 0);
  t.equal(delivery({ kind: 'relay', outcome: 'delivered' }, 'count'), 1);
  for (const [name, type, labels] of expected) {
    const f = fams.get(name)!;
    t.equal(f.type, type, `${name} is a ${type}`);
    t.ok(f.help.length > 10, `${name} has help`);
    const main = type === 'histogram' ? `${name}_bucket` : name;
    for (const s of f.samples.get(main) ?? []) t.same(Object.keys(s.labels).sort(), [...labels].sort(), `${name} labels`);
  }
  function nonZero(name: string, sample = name, where: Record<string, string> = {}) {
    t.ok(total(fams.get(name), sample, where) > 0, `${sample} ${JSON.stringify(where)} > 0`);
  }
  function nonZeroCount(name: string, where: Record<string, string>) {
    nonZero(name, `${name}_count`, where);
  }
  nonZero('sluice_delivery_attempts_total', 'sluice_delivery_attempts_total', { kind: 'outbound', outcome: 'delivered', bounce_class: 'none' });
  nonZero('sluice_delivery_attempts_total', 'sluice_delivery_attempts_total', { kind: 'outbound', outcome: 'deferred', bounce_class: '4.2' });
  nonZero('sluice_delivery_attempts_total', 'sluice_delivery_attempts_total', { kind: 'relay', outcome: 'delivered' });
  nonZero('sluice_smtp_sessions_total', 'sluice_smtp_sessions_total', { listener: 'mx' });
  nonZero('sluice_smtp_replies_total', 'sluice_smtp_replies_total', { listener: 'mx', class: '2xx' });
  nonZero('sluice_inbound_verdicts_total', 'sluice_inbound_verdicts_total', { action: 'relay' });
  // Fed by the scan verdicts: the clean message (spam and virus unknown) and the GTUBE one (spam confirmed).
  const scans = (where: Record<string, string>) => total(fams.get('sluice_outbound_scan_dispositions_total'), 'sluice_outbound_scan_dispositions_total', where);
  t.equal(scans({ scanner: 'spam', disposition: 'unknown' }), 1, 'the clean message');
  t.equal(scans({ scanner: 'spam', disposition: 'confirmed' }), 1, 'the GTUBE message');
  t.equal(scans({ scanner: 'virus', disposition: 'unknown' }), 2, 'both messages were scanned for viruses');
  nonZero('sluice_webhook_batches_total', 'sluice_webhook_batches_total', { status: '2xx_response' });
  nonZero('sluice_webhook_dispatch_lag_seconds', 'sluice_webhook_dispatch_lag_seconds_count');
  nonZero('sluice_http_requests_total', 'sluice_http_requests_total', { method: 'POST', route: '/tx/v1/send-async', status: '202' });
  nonZero('sluice_sqlite_commit_duration_seconds', 'sluice_sqlite_commit_duration_seconds_count');
  nonZero('sluice_queue_deliveries', 'sluice_queue_deliveries', { state: 'queued', kind: 'outbound' });
  nonZero('sluice_queue_oldest_message_age_seconds');
  // The inbound message's SPF look-up (TXT of sender.test) asked a server: nothing was cached before it.
  nonZero('sluice_dns_lookups_total', 'sluice_dns_lookups_total', { type: 'TXT', result: 'miss' });
  t.ok(total(fams.get('sluice_event_loop_lag_seconds'), 'sluice_event_loop_lag_seconds', { quantile: '1' }) > 0, 'event-loop lag is measured');
  t.equal(total(fams.get('sluice_webhook_events_pending'), 'sluice_webhook_events_pending'), 0, 'every event was posted');
  t.ok(total(fams.get('sluice_webhook_dispatch_lag_seconds'), 'sluice_webhook_dispatch_lag_seconds_sum') >= 1, 'lag by the injected clock');
  t.notMatch(res.text, /bob@|later@|carol@|m1@sender|request_id|\/tx\/v1\/webhook\?/, 'no recipient, message id or raw path');

  // The Grafana dashboard in contrib/ queries only families that exist, and charts every one of them.
  const dashboard = fs.readFileSync('contrib/grafana-sluice.json', 'utf8');
  const used = new Set([...dashboard.matchAll(/sluice_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')));
  used.delete('sluice_');
  t.same([...used].filter((n) => !fams.has(n)), [], 'dashboard names exist');
  t.same([...fams.keys()].filter((n) => n.startsWith('sluice_') && !used.has(n)), [], 'every sluice_* family has a panel');

  // An unmatched path is one series, not one per path.
  await stack.api('GET', '/no/such/path/123');
  const after = parseExposition((await scrape(stack)).text);
  t.ok(total(after.get('sluice_http_requests_total'), 'sluice_http_requests_total', { route: 'unmatched', status: '404' }) >= 1);
});

// A fresh server (SQLite: its generated TLS pair is a file in data_dir): a series for every family from the start.
t.test('a fresh server: every family has series, each known label set at 0; certificate expiry per name', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '127.0.0.1:0' } });
  let fams = parseExposition((await scrape(stack)).text);
  const empty = [...fams.entries()].filter(([name, f]) => name.startsWith('sluice_') && f.samples.size === 0).map(([name]) => name);
  t.same(empty.sort(), ['sluice_http_request_duration_seconds', 'sluice_http_requests_total'], 'only the HTTP families wait for a first request');
  const at0 = (name: string, where: Record<string, string>) => {
    const main = fams.get(name)?.type === 'histogram' ? `${name}_count` : name;
    const got = (fams.get(name)?.samples.get(main) ?? []).filter((s) => Object.entries(where).every(([k, v]) => s.labels[k] === v));
    t.ok(got.length > 0 && got.every((s) => s.value === 0), `${main} ${JSON.stringify(where)} is 0`);
  };
  for (const listener of ['mx', 'submission', 'submission_tls']) {
    at0('sluice_smtp_sessions_total', { listener });
    for (const cls of ['2xx', '3xx', '4xx', '5xx']) at0('sluice_smtp_replies_total', { listener, class: cls });
    for (const command of ['EHLO', 'STARTTLS', 'AUTH', 'MAIL', 'RCPT', 'DATA', 'message', 'QUIT', 'other']) at0('sluice_smtp_command_duration_seconds', { listener, command });
  }
  for (const kind of ['outbound', 'relay', 'dsn']) {
    for (const outcome of ['delivered', 'deferred', 'bounced']) at0('sluice_delivery_attempts_total', { kind, outcome, bounce_class: 'none' });
    for (const outcome of ['delivered', 'bounced']) at0('sluice_delivery_duration_seconds', { kind, outcome });
    for (const state of ['queued', 'sending', 'held']) at0('sluice_queue_deliveries', { kind, state });
  }
  for (const action of ['relay', 'flag', 'quarantine', 'block', 'tempfail']) at0('sluice_inbound_verdicts_total', { action });
  for (const outcome of ['learned', 'over_hourly_bound', 'failed']) at0('sluice_bayes_autolearned_total', { class: 'spam', outcome });
  at0('sluice_reports_received_total', { kind: 'arf', result: 'complained' });
  at0('sluice_reports_received_total', { kind: 'dsn', result: 'bounced' });
  for (const disposition of ['confirmed', 'suspect', 'bulk', 'unknown']) at0('sluice_outbound_scan_dispositions_total', { scanner: 'spam', disposition });
  for (const disposition of ['confirmed', 'high', 'medium', 'unknown']) at0('sluice_outbound_scan_dispositions_total', { scanner: 'virus', disposition });
  for (const status of ['2xx_response', '4xx_response', '5xx_response', 'no_response']) at0('sluice_webhook_batches_total', { status });
  for (const type of ['A', 'AAAA', 'MX', 'TXT']) for (const result of ['hit', 'shared', 'miss']) at0('sluice_dns_lookups_total', { type, result });
  at0('sluice_shaping_active', { action: 'suspend' });
  t.equal(fams.get('sluice_reports_received_total')!.samples.get('sluice_reports_received_total')!.filter((s) => s.labels.kind === 'arf' && s.labels.result === 'bounced').length, 0, 'no label set a kind cannot have');

  // The certificate the SMTP listeners present (the generated self-signed pair): its notAfter, per DNS name.
  const cert = new crypto.X509Certificate(fs.readFileSync(`${stack.dataDir}/tls/cert.pem`));
  const sans = (cert.subjectAltName ?? '').split(', ').filter((n) => n.startsWith('DNS:')).map((n) => n.slice(4));
  t.ok(sans.length > 0, 'the generated certificate names the host');
  const expiry = fams.get('sluice_tls_certificate_expiry_timestamp_seconds')!.samples.get('sluice_tls_certificate_expiry_timestamp_seconds')!;
  t.same(expiry.map((s) => [s.labels.listener, s.labels.name, s.value]).sort(), sans.map((n) => ['smtp', n, Date.parse(cert.validTo) / 1000]).sort());

  // The HTTP families start with the first request, under its route template.
  t.equal((await stack.api('GET', '/healthz')).status, 200);
  fams = parseExposition((await scrape(stack)).text);
  t.equal(total(fams.get('sluice_http_request_duration_seconds'), 'sluice_http_request_duration_seconds_count', { method: 'GET', route: '/healthz', status_class: '2xx' }), 1);

  // Grafana's $instance comes from a family every role exports, with a series from the first scrape.
  const dashboard = JSON.parse(fs.readFileSync('contrib/grafana-sluice.json', 'utf8')) as { templating: { list: { name: string; query?: string }[] } };
  t.equal(dashboard.templating.list.find((v) => v.name === 'instance')?.query, 'label_values(sluice_build_info, instance)');
});

// Listeners only, nothing from the store: once, on SQLite.
t.test('/metrics: own loopback listener by default; on http.listen when http.metrics_listen = ""', async (t) => {
  const own = await startStack(t);
  t.ok(own.metrics, 'a metrics listener is bound');
  t.equal(own.metrics!.host, '127.0.0.1');
  t.equal((await own.api('GET', '/metrics')).status, 404, 'not on the HTTP listener');
  const other = await fetch(`http://127.0.0.1:${own.metrics!.port}/healthz`);
  t.equal(other.status, 404, 'the metrics listener serves nothing else');
  await other.text();

  const shared = await startStack(t, { env: { SLUICE_HTTP_METRICS_LISTEN: '' } });
  t.equal(shared.metrics, undefined);
  const res = await shared.api('GET', '/metrics');
  t.equal(res.status, 200);
  t.match(res.text, /^# HELP sluice_/m);
});
