// Owns TLS-RPT (RFC 8460): counting each MTA-STS domain's TLS results in memory, writing them to the store every
// minute, and once a day sending each domain's report (JSON, gzip) to the rua of its _smtp._tls record: mailed to
// mailto: URIs, POSTed to https: ones.
import crypto from 'node:crypto';
import { domainOf } from '../smtp/address.js';
import zlib from 'node:zlib';
import type { Logger } from 'pino';
import { bufferSource } from '../../storage/message-source.js';
import type { TlsReportStore, TlsResultCount } from '../../storage/ports/tls-reports.js';
import type { TlsResult } from '../delivery/tls-results.js';
import type { AcceptedDsn } from '../queue/accepted-message.js';
import { foldLines } from '../smtp/header-lines.js';
import { rfc5322Date } from './alert-email.js';

const DAY_MS = 86_400_000;
/** Days of results kept: a report that could not go out is retried for this long. */
export const KEEP_DAYS = 7;
/** A day is reported once every process has flushed it: this long after it ended. */
const SETTLE_MS = 10 * 60_000;

export interface TlsReportDeps {
  store: TlsReportStore;
  queue: { accept(messages: AcceptedDsn[]): Promise<unknown> };
  /** A domain's TXT records, each joined; undefined when the look-up failed. */
  txt: (name: string) => Promise<string[] | undefined>;
  /** `outbound.tls_reports_from`: no report is sent while unset. */
  from: () => string | undefined;
  /**
   * DKIM-signs a report From `domain` (RFC 8460 §3 registers the DKIM service type `tlsrpt` for it: receivers check
   * the reporting domain's signature), or gives it back as it is when no key may sign for that domain.
   */
  sign?: (raw: Buffer, domain: string) => Promise<Buffer>;
  /** `smtp.hostname`: organization-name and submitter. */
  hostname: string;
  /** `outbound.public_ip`, the report's sending-mta-ip, when set. */
  publicIp?: string | undefined;
  /**
   * POSTs a report (gzipped JSON) to an https rua through the outbound-connection policy (the domain chose the URL);
   * resolves with the HTTP status, null when no answer came. Without it https URIs are not reported to.
   */
  post?: (url: string, gz: Buffer) => Promise<{ statusCode: number | null; error?: string }>;
  now: () => number;
  logger: Logger;
  flushMs?: number;
  intervalMs?: number;
}

export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * The report URIs of a `_smtp._tls` record (RFC 8460 §3: `v=TLSRPTv1; rua=mailto:…,https:…`): mailto addresses, and
 * https URLs a report is POSTed to. Exactly one TLSRPTv1 record, or none is used.
 */
export function ruaOf(records: readonly string[]): { mailto: string[]; https: string[] } {
  const rec = records.filter((r) => /^v=TLSRPTv1\s*(;|$)/.test(r));
  if (rec.length !== 1) return { mailto: [], https: [] };
  const rua = (/(?:^|;)\s*rua\s*=\s*([^;]*)/.exec(rec[0]!)?.[1] ?? '').split(',').map((u) => u.trim());
  const mailto = rua
    .filter((u) => /^mailto:/i.test(u))
    .map((u) => decodeURIComponent(u.slice(7)).trim())
    .filter((a) => /^[^\s@<>]+@[^\s@<>]+$/.test(a));
  const https = rua.filter((u) => /^https:\/\//i.test(u) && URL.canParse(u));
  return { mailto, https };
}

/** The RFC 8460 §4.4 report of one policy domain's day. */
export function buildReport(o: { domain: string; day: string; results: readonly TlsResultCount[]; hostname: string; contact: string; publicIp?: string | undefined }) {
  const start = Date.parse(`${o.day}T00:00:00Z`);
  const byPolicy = new Map<string, TlsResultCount[]>();
  for (const r of o.results) {
    const key = `${r.policyType}\u0000${r.policyText}`;
    byPolicy.set(key, [...(byPolicy.get(key) ?? []), r]);
  }
  return {
    'organization-name': o.hostname,
    'date-range': { 'start-datetime': new Date(start).toISOString().replace('.000', ''), 'end-datetime': new Date(start + DAY_MS - 1000).toISOString().replace('.000', '') },
    'contact-info': o.contact,
    'report-id': `${o.day}.${o.domain}@${o.hostname}`,
    policies: [...byPolicy.values()].map((rows) => {
      const lines = JSON.parse(rows[0]!.policyText) as string[];
      const ok = rows.filter((r) => r.result === 'success');
      const failed = rows.filter((r) => r.result !== 'success');
      return {
        policy: {
          'policy-type': rows[0]!.policyType,
          'policy-string': lines,
          'policy-domain': o.domain,
          'mx-host': lines.filter((l) => /^mx\s*:/i.test(l)).map((l) => l.slice(l.indexOf(':') + 1).trim()),
        },
        summary: {
          'total-successful-session-count': ok.reduce((n, r) => n + r.sessions, 0),
          'total-failure-session-count': failed.reduce((n, r) => n + r.sessions, 0),
        },
        'failure-details': failed.map((r) => ({
          'result-type': r.result,
          ...(o.publicIp ? { 'sending-mta-ip': o.publicIp } : {}),
          ...(r.mxHost ? { 'receiving-mx-hostname': r.mxHost } : {}),
          ...(r.receivingIp ? { 'receiving-ip': r.receivingIp } : {}),
          'failed-session-count': r.sessions,
        })),
      };
    }),
  };
}

/** The report as RFC 8460 §5.3 mails it: multipart/report; report-type="tlsrpt", the JSON gzipped as an attachment. */
export function reportEmail(o: { report: ReturnType<typeof buildReport>; domain: string; day: string; from: string; to: string[]; hostname: string; now: number }): AcceptedDsn & { raw: Buffer } {
  const messageId = `${crypto.randomBytes(16).toString('hex')}@${o.hostname}`;
  const boundary = `tlsrpt-${crypto.randomBytes(12).toString('hex')}`;
  const start = Math.floor(Date.parse(`${o.day}T00:00:00Z`) / 1000);
  const file = `${o.hostname}!${o.domain}!${start}!${start + 86_399}.json.gz`;
  const gz = zlib.gzipSync(Buffer.from(JSON.stringify(o.report), 'utf8')).toString('base64');
  const subject = `Report Domain: ${o.domain} Submitter: ${o.hostname} Report-ID: <${o.report['report-id']}>`;
  const lines = [
    `From: <${o.from}>`,
    `To: ${o.to.map((a) => `<${a}>`).join(', ')}`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date(o.now)}`,
    `Message-ID: <${messageId}>`,
    `TLS-Report-Domain: ${o.domain}`,
    `TLS-Report-Submitter: ${o.hostname}`,
    'Auto-Submitted: auto-generated',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type="tlsrpt"; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    `This is an aggregate TLS report from ${o.hostname} for ${o.domain}, ${o.day} (RFC 8460).`,
    '',
    `--${boundary}`,
    `Content-Type: application/tlsrpt+gzip; name="${file}"`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${file}"`,
    '',
    ...(gz.match(/.{1,76}/g) ?? []),
    '',
    `--${boundary}--`,
    '',
  ];
  const raw = Buffer.from(foldLines(lines.join('\r\n')), 'utf8');
  return {
    kind: 'dsn',
    sendRequestId: crypto.randomUUID(),
    messageId,
    fromEmail: o.from,
    subject,
    raw,
    body: bufferSource(raw),
    recipients: o.to,
  };
}

/** Creates the TLS-RPT collector (every process) and reporter (the housekeeping leader's). */
export function createTlsReports(deps: TlsReportDeps) {
  const log = deps.logger.child({ component: 'tls-rpt' });
  const pending = new Map<string, TlsResultCount>();
  let flushTimer: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  async function flush(): Promise<void> {
    if (pending.size === 0) return;
    const counts = [...pending.values()];
    pending.clear();
    try {
      await deps.store.add(counts);
    } catch (err) {
      // Kept for the next flush: a store that is down for a minute loses no count.
      for (const c of counts) add(c);
      log.warn({ err }, 'TLS-RPT results could not be written; kept for the next flush');
    }
  }

  /** Adds a count to the pending ones, summing by key. */
  function add(c: TlsResultCount): void {
    const key = [c.day, c.policyDomain, c.policyType, c.mxHost, c.receivingIp, c.result].join('\u0000');
    const had = pending.get(key);
    pending.set(key, had ? { ...c, sessions: had.sessions + c.sessions } : c);
  }

  async function sendDay(day: string): Promise<number> {
    let sent = 0;
    const from = deps.from();
    for (const domain of await deps.store.unreported(day)) {
      const records = from ? await deps.txt(`_smtp._tls.${domain}`) : [];
      // The DNS failed: tried again at the next run, within KEEP_DAYS.
      if (records === undefined) continue;
      const rua = ruaOf(records);
      const https = deps.post ? rua.https : [];
      let posted = 0;
      if (from && (rua.mailto.length > 0 || https.length > 0)) {
        const results = await deps.store.resultsOf(day, domain);
        const report = buildReport({ domain, day, results, hostname: deps.hostname, contact: from, publicIp: deps.publicIp });
        // RFC 8460 §5.3: each https URI gets the gzipped JSON POSTed, Content-Type application/tlsrpt+gzip.
        const gz = zlib.gzipSync(Buffer.from(JSON.stringify(report), 'utf8'));
        for (const url of https) {
          const out = await deps.post!(url, gz);
          if (out.statusCode !== null && out.statusCode >= 200 && out.statusCode < 300) {
            posted++;
            log.info({ domain, day, url }, 'TLS-RPT report posted');
          } else log.warn({ domain, day, url, status: out.statusCode, error: out.error }, 'TLS-RPT report not accepted by its https rua');
        }
        if (rua.mailto.length > 0) {
          const { raw, ...email } = reportEmail({ report, domain, day, from, to: rua.mailto, hostname: deps.hostname, now: deps.now() });
          const signed = deps.sign ? await deps.sign(raw, domainOf(from)) : raw;
          await deps.queue.accept([{ ...email, body: bufferSource(signed) }]);
          log.info({ domain, day, to: rua.mailto }, 'TLS-RPT report queued');
        }
        // Only https URIs, none of which took it: tried again at the next run, within KEEP_DAYS (a mailed report
        // is not sent twice for an https URI that failed beside it).
        if (rua.mailto.length === 0 && posted === 0) continue;
        sent++;
      }
      // Marked even when nothing was sent (no From set, no rua): the day of that domain is done with.
      await deps.store.markSent(day, domain, deps.now());
    }
    return sent;
  }

  return {
    /** One session's (or policy look-up's) result: counted in memory until the next flush. */
    record(r: TlsResult): void {
      add({
        policyDomain: r.policyDomain, day: dayOf(deps.now()), policyType: r.policy ? 'sts' : 'no-policy-found',
        policyText: JSON.stringify(r.policy?.lines ?? []), mxHost: r.mxHost ?? '', receivingIp: r.receivingIp ?? '', result: r.result, sessions: 1,
      });
    },
    flush,
    /**
     * Reports every settled day of the kept ones not yet reported (a day is settled SETTLE_MS after it ended, when
     * every process has flushed it), then prunes results past KEEP_DAYS. Resolves with the reports queued.
     */
    async runOnce(): Promise<number> {
      await flush();
      const now = deps.now();
      let sent = 0;
      for (let back = KEEP_DAYS - 1; back >= 1; back--) {
        const day = dayOf(now - back * DAY_MS);
        if (Date.parse(`${day}T00:00:00Z`) + DAY_MS + SETTLE_MS > now) continue;
        sent += await sendDay(day);
      }
      await deps.store.prune(dayOf(now - KEEP_DAYS * DAY_MS));
      return sent;
    },
    /** Flushes every minute (every process). */
    startFlushing(): void {
      flushTimer = setInterval(() => void flush(), deps.flushMs ?? 60_000);
      flushTimer.unref();
    },
    /** Reports hourly (the housekeeping leader). */
    start(): void {
      timer = setInterval(() => {
        running = this.runOnce().catch((err) => log.error({ err }, 'TLS-RPT reports failed'));
      }, deps.intervalMs ?? 3_600_000);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
    /** Stops flushing and writes what is pending. */
    async close(): Promise<void> {
      if (flushTimer) clearInterval(flushTimer);
      await flush();
    },
  };
}

export type TlsReports = ReturnType<typeof createTlsReports>;
