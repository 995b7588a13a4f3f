// Owns the world of the engagement tests: a stack on the real clock, DNS, an MX sink, a webhook receiver, a landing site.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { startDnsServer, type DnsServer } from './dns-server.js';
import { startSink, type Sink } from './smtp-sink.js';
import type { BackendName } from './backends.js';
import { createClock, startStack, type PortStack, type Stack } from './stack.js';
import { startReceiver, type Receiver } from './webhook-receiver.js';

/** What a person's browser sends (machine-traffic rules let it through). */
export const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';

/** A landing site the tracked links point at: answers 200 to anything and records the paths asked. */
export async function startSite(t: Test): Promise<{ base: string; paths: string[] }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('landing');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

/** The world; its stack is the SQLite Stack unless the world was started on a backend of its own. */
export interface World<S extends PortStack = Stack> {
  stack: S;
  dns: DnsServer;
  sink: Sink;
  receiver: Receiver;
  key: string;
  accountId: number;
  site: { base: string; paths: string[] };
  /** The payloads of the account's outbox events (of one kind), in append order. */
  events: (kind?: string) => Promise<any[]>;
}

/**
 * A stack whose clock starts at the real time (the SDK checks a webhook's `created` against Date.now()), a local DNS
 * zone (MX to the sink, lockdown, DKIM), an account with a published DKIM key and an enrolled webhook receiver.
 */
export async function world(t: Test, env?: Record<string, string>): Promise<World>;
export async function world(t: Test, env: Record<string, string>, backend: BackendName): Promise<World<PortStack>>;
export async function world(t: Test, env: Record<string, string> = {}, backend?: BackendName): Promise<World<PortStack>> {
  const sink = await startSink(t);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme'] },
  });
  const stackOpts = {
    clock: createClock(Math.floor(Date.now() / 1000) * 1000),
    env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), ...env },
  };
  const stack = backend ? await startStack(t, { ...stackOpts, backend }) : await startStack(t, stackOpts);
  const acct = await stack.createAccount('acme');
  const dkim = await stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: acct.key, body: { selector: 's1', key_length: 1024 } });
  const rec = dkim.body.dkim_dns_records[0];
  dns.zones[rec.name] = { TXT: [rec.value] };
  const receiver = await startReceiver(t);
  const enrolled = await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: acct.key });
  if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status}`);
  const site = await startSite(t);
  return {
    stack, dns, sink, receiver, key: acct.key, accountId: acct.id, site,
    events: async (kind) => (await stack.events(acct.id)).filter((r) => kind === undefined || r.event === kind).map((r) => r.payload),
  };
}

export function trackedMail(site: string, extra: Record<string, unknown> = {}) {
  return {
    personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }],
    from: { email: 'news@sender.test', name: 'Sender News' },
    subject: 'Spring sale',
    content: [
      { type: 'text/plain', value: `Shop: ${site}/shop?a=1&b=2` },
      {
        type: 'text/html',
        value: `<html><body><p><a href="${site}/shop?a=1&amp;b=2">Shop</a> <a href="${site}/terms" clicktracking="off">Terms</a> ` +
          `<a href="mailto:help@sender.test">Help</a> <a href="${site}/shop?a=1&amp;b=2">Shop again</a></p></body></html>`,
      },
    ],
    campaign_id: 'spring',
    tracking_settings: { click_tracking: { enable: true }, open_tracking: { enable: true } },
    ...extra,
  };
}

/** The tracking URLs in a delivered HTML part. */
export function trackingUrls(html: string): { clicks: string[]; pixel: string | undefined } {
  return {
    clicks: [...html.matchAll(/href="([^"]*\/t\/c\/[A-Za-z0-9_-]+)"/g)].map((m) => m[1] as string),
    pixel: /<img src="([^"]*\/t\/o\/[A-Za-z0-9_-]+)"/.exec(html)?.[1],
  };
}

