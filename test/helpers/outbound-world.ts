// Owns the outbound world abuse-control tests share: local DNS, a recipient MX sink, a Sluice stack with account
// `acme` (API key, SMTP password, published DKIM key), and REST / SMTP / search shorthands.
import nodemailer from 'nodemailer';
import type { DeliveryState } from '../../storage/ports/queue.js';
import type { Test } from 'tap';
import { startDnsServer, type DnsServer } from './dns-server.js';
import { startSink, type Sink, type SinkOptions } from './smtp-sink.js';
import type { BackendName } from './backends.js';
import { startStack, type PortStack, type Stack, type TestClock } from './stack.js';

/** The world; its stack is the SQLite Stack unless the world was started on a backend of its own. */
export interface OutboundWorld<S extends PortStack = Stack> {
  stack: S;
  dns: DnsServer;
  /** MX of rcpt.test (and of alerts.test, where email alerts go). */
  sink: Sink;
  key: string;
  accountId: number;
  password: string;
  /** POST a send body (default /tx/v1/send-async) with acme's key. */
  rest: (body: Record<string, unknown>, path?: string, key?: string) => ReturnType<Stack['api']>;
  /** Submits `raw` over SMTP submission as acme; resolves with the final reply text (`250 …`, `550 5.7.1 …`). */
  smtp: (raw: string, opts?: { user?: string; pass?: string; from?: string }) => Promise<string>;
  /** POST /outbound/v1/search with acme's key over today. */
  search: (filters: Record<string, unknown>, key?: string) => Promise<any[]>;
  /** Deliveries in a state (queued, dropped, delivered…), read through the queue views port. */
  deliveries: (state: DeliveryState) => Promise<number>;
}

/** A send body from app@sender.test to bob@rcpt.test with `text` as its plain-text content. */
export function mail(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }],
    from: { email: 'app@sender.test', name: 'App' },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: text }],
    ...extra,
  };
}

/** A raw message as an SMTP client submits it. */
export function rawMail(body: string, subject = 'Submitted'): string {
  return `From: App <app@sender.test>\r\nTo: bob@rcpt.test\r\nSubject: ${subject}\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@sender.test>\r\n\r\n${body}\r\n`;
}

export interface OutboundWorldOptions {
  env?: Record<string, string>;
  clock?: TestClock;
  sink?: SinkOptions;
  startWorker?: boolean;
}

/** Starts the world: on SQLite with its Stack, or on `backend` seen through the ports. */
export async function outboundWorld(t: Test, opts?: OutboundWorldOptions): Promise<OutboundWorld>;
export async function outboundWorld(t: Test, opts: OutboundWorldOptions & { backend: BackendName }): Promise<OutboundWorld<PortStack>>;
export async function outboundWorld(t: Test, opts: OutboundWorldOptions & { backend?: BackendName } = {}): Promise<OutboundWorld<PortStack>> {
  const sink = await startSink(t, opts.sink);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'alerts.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme'] },
    // Email alerts go only to a domain the account may send from (Domain Lockdown).
    '_sluice.alerts.test': { TXT: ['v=sluice1 auth=acme'] },
  });
  const stackOpts = {
    env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_PUBLIC_IP: '127.0.0.1', ...opts.env },
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.startWorker ? { startWorker: true } : {}),
  };
  const stack = opts.backend ? await startStack(t, { ...stackOpts, backend: opts.backend }) : await startStack(t, stackOpts);
  const acct = await stack.createAccount('acme');
  const pw = await stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
  if (!pw.ok) throw new Error('password');
  const dkim = await stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: acct.key, body: { selector: 's1' } });
  const rec = dkim.body.dkim_dns_records[0];
  dns.zones[rec.name] = { TXT: [rec.value] };
  const today = new Date(stack.clock.now()).toISOString().slice(0, 10);
  // end_date is exclusive (the specification: start_date before end_date).
  const tomorrow = new Date(stack.clock.now() + 86_400_000).toISOString().slice(0, 10);
  return {
    stack,
    dns,
    sink,
    key: acct.key,
    accountId: acct.id,
    password: pw.value.password,
    rest: (body, path = '/tx/v1/send-async', key = acct.key) => stack.api('POST', path, { key, body }),
    async smtp(raw, o = {}) {
      const transport = nodemailer.createTransport({
        host: stack.submission.host,
        port: stack.submission.port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        name: 'app.client.test',
        auth: { user: o.user ?? 'acme', pass: o.pass ?? pw.value.password },
      });
      try {
        const info = await transport.sendMail({ envelope: { from: o.from ?? 'app@sender.test', to: ['bob@rcpt.test'] }, raw });
        return info.response;
      } catch (err) {
        return (err as { response?: string; message: string }).response ?? (err as Error).message;
      } finally {
        transport.close();
      }
    },
    async search(filters, key = acct.key) {
      const res = await stack.api('POST', '/outbound/v1/search?count=100', { key, body: { start_date: today, end_date: tomorrow, ...filters } });
      if (res.status !== 200) throw new Error(`search: ${res.status} ${res.text}`);
      return res.body.results;
    },
    deliveries: async (state) => (await stack.store.queueViews.browse({ accountIds: null, states: [state], limit: 1_000_000, offset: 0 })).length,
  };
}
