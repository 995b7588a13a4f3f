// Owns the scene the console tests share: a stack with two tenants (one with a sub-account), deferred and delivered
// outbound mail, a quarantined inbound message per tenant, and a fetch-based console client (sign-in, CSRF).
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Test } from 'tap';
import { startSink, type Sink } from './smtp-sink.js';
import type { BackendName } from './backends.js';
import { startStack, type PortStack } from './stack.js';
import { BROWSER, trackingUrls } from './tracking-world.js';

export interface Tenant {
  handle: string;
  id: number;
  key: string;
  inboundKey: string;
}

export interface ConsoleWorld {
  stack: PortStack;
  sink: Sink;
  /** `deferring = false` lets the sink accept later.test from then on. */
  state: { deferring: boolean };
  base: string;
  acme: Tenant;
  bravo: Tenant;
  /** acme's sub-account and its own api key. */
  shop: { handle: string; id: number; key: string };
  send: (t: Tenant | { key: string }, to: string, subject: string, campaign?: string) => Promise<void>;
  /** Sends an HTML message with open and click tracking (delivered by the next worker pass). */
  sendTracked: (t: Tenant | { key: string }, to: string, subject: string, campaign?: string) => Promise<void>;
  /** A person reads the delivered tracked message to `to`: loads the pixel and, with `click`, follows the link. */
  engage: (to: string, o: { click: boolean }) => Promise<void>;
  /** Sends GTUBE (CONFIRMED spam: refused with 403, a strike for the sender identity app@sender.test). */
  sendSpam: (t: Tenant) => Promise<number>;
  /** Delivers an inbound message that the domain's quarantine policy holds (GTUBE). */
  quarantine: (to: string, subject: string) => Promise<void>;
  deliveryOf: (rcpt: string) => Promise<{ id: number; state: string; next_attempt_at: number; attempts: number }>;
}

const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

export async function consoleWorld(t: Test, extraEnv: Record<string, string> = {}, backend: BackendName = 'sqlite', logger?: Logger): Promise<ConsoleWorld> {
  // Downstream and remote MX in one: recipients at later.test are deferred while `deferring`, those at bounce.test
  // refused for good, everything else accepted.
  const state = { deferring: true };
  const sink = await startSink(t, {
    onRcpt: (r) =>
      r.endsWith('@later.test') && state.deferring
        ? { code: 451, message: '4.2.0 mailbox busy, try later' }
        : r.endsWith('@bounce.test')
          ? { code: 550, message: '5.1.1 no such user' }
          : undefined,
  });
  const stack = await startStack(t, {
    backend,
    ...(logger ? { logger } : {}),
    env: {
      SLUICE_OUTBOUND_LOCKDOWN: 'off',
      SLUICE_OUTBOUND_TRANSPORT_MAP: ['rcpt.test', 'later.test', 'bounce.test'].map((d) => `${d}=127.0.0.1:${sink.port}`).join(','),
      ...extraEnv,
    },
  });
  const tenant = async (handle: string, domain: string): Promise<Tenant> => {
    const a = await stack.createAccount(handle);
    const k = await stack.accounts.createApiKey(a.id, 'inbound', stack.clock.now());
    if (!k.ok) throw new Error('key');
    const r = await stack.api('POST', '/inbound/v1/domains', {
      key: k.value.key,
      body: {
        domain,
        subscriptionHandle: 'default',
        settings: { abusePolicy: 'quarantine' },
        downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }],
      },
    });
    if (r.status !== 201) throw new Error(`provision ${domain}: ${r.status} ${r.text}`);
    return { handle, id: a.id, key: a.key, inboundKey: k.value.key };
  };
  const acme = await tenant('acme', 'acme-corp.test');
  const bravo = await tenant('bravo', 'bravo-corp.test');
  const sub = await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'acmeshop', company_name: 'Acme Shop' } });
  if (sub.status !== 200 && sub.status !== 201) throw new Error(`sub-account: ${sub.status} ${sub.text}`);
  const subRow = (await stack.accounts.findByHandle('acmeshop'))!;
  const subKey = await stack.accounts.createApiKey(subRow.id, 'api', stack.clock.now());
  if (!subKey.ok) throw new Error('sub key');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const post = async (who: { key: string }, body: Record<string, unknown>) => {
    const r = await stack.api('POST', '/tx/v1/send-async', { key: who.key, body: { from: { email: 'app@sender.test' }, ...body } });
    if (r.status !== 202) throw new Error(`send: ${r.status} ${r.text}`);
  };
  return {
    stack,
    sink,
    state,
    base,
    acme,
    bravo,
    shop: { handle: 'acmeshop', id: subRow.id, key: subKey.value.key },
    async send(who, to, subject, campaign) {
      const r = await stack.api('POST', '/tx/v1/send-async', {
        key: who.key,
        body: {
          personalizations: [{ to: [{ email: to }] }],
          from: { email: 'app@sender.test' },
          subject,
          content: [{ type: 'text/plain', value: 'hello' }],
          ...(campaign ? { campaign_id: campaign } : {}),
        },
      });
      if (r.status !== 202) throw new Error(`send: ${r.status} ${r.text}`);
    },
    async sendTracked(who, to, subject, campaign) {
      await post(who, {
        personalizations: [{ to: [{ email: to }] }],
        subject,
        content: [
          { type: 'text/plain', value: 'Shop: https://shop.example/sale' },
          { type: 'text/html', value: '<html><body><p><a href="https://shop.example/sale">Shop</a></p></body></html>' },
        ],
        tracking_settings: { click_tracking: { enable: true }, open_tracking: { enable: true } },
        ...(campaign ? { campaign_id: campaign } : {}),
      });
    },
    async engage(to, o) {
      const msg = [...sink.messages].reverse().find((m) => m.rcptTo.includes(to));
      if (!msg) throw new Error(`no message delivered to ${to}`);
      const urls = trackingUrls(String((await simpleParser(msg.raw)).html));
      if (!urls.pixel || !urls.clicks[0]) throw new Error('no tracking in the delivered message');
      // Without following the redirect: the tracker records the click and answers 302 to the stored target.
      const open = await fetch(urls.pixel, { headers: { 'User-Agent': BROWSER } });
      if (open.status !== 200) throw new Error(`pixel: ${open.status}`);
      await open.arrayBuffer();
      if (!o.click) return;
      const click = await fetch(urls.clicks[0], { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
      if (click.status !== 302) throw new Error(`click: ${click.status}`);
      await click.arrayBuffer();
    },
    async sendSpam(who) {
      const r = await stack.api('POST', '/tx/v1/send-async', {
        key: who.key,
        body: { personalizations: [{ to: [{ email: 'victim@rcpt.test' }] }], from: { email: 'app@sender.test' }, subject: 'spam', content: [{ type: 'text/plain', value: GTUBE }] },
      });
      return r.status;
    },
    async quarantine(to, subject) {
      const mx = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.spam.test' });
      await mx.sendMail({
        envelope: { from: 'x@spam.test', to: [to] },
        raw: `From: Spammer <x@spam.test>\r\nTo: ${to}\r\nSubject: ${subject}\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <${subject.replace(/\W/g, '')}@spam.test>\r\n\r\n${GTUBE}\r\n`,
      });
      mx.close();
    },
    async deliveryOf(rcpt) {
      const [row] = await stack.sql<{ id: number; state: string; next_attempt_at: number; attempts: number }>(
        'SELECT id, state, next_attempt_at, attempts FROM deliveries WHERE rcpt = ? ORDER BY id DESC LIMIT 1',
        rcpt,
      );
      return row!;
    },
  };
}

/**
 * A console client over fetch (or `fetchImpl`, e.g. verified HTTPS): keeps its cookies, signs in, reads the CSRF
 * token of the last page.
 */
export function consoleClient(base: string, fetchImpl: typeof fetch = fetch) {
  const jar = new Map<string, string>();
  let csrf = '';
  const remember = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const v = decodeURIComponent(pair!.slice(i + 1));
      if (v === '') jar.delete(pair!.slice(0, i));
      else jar.set(pair!.slice(0, i), v);
    }
  };
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('; ');
  const client = {
    jar,
    csrf: () => csrf,
    async get(path: string) {
      const res = await fetchImpl(base + path, { headers: { cookie: cookieHeader() }, redirect: 'manual' });
      remember(res);
      const text = await res.text();
      const m = /name="_csrf" value="([^"]+)"/.exec(text);
      if (m) csrf = m[1]!;
      return { status: res.status, text, headers: res.headers };
    },
    async post(path: string, fields: Record<string, string>, o: { csrf?: string | null } = {}) {
      const body = new URLSearchParams(fields);
      const token = o.csrf === undefined ? csrf : o.csrf;
      if (token !== null) body.set('_csrf', token);
      const res = await fetchImpl(base + path, {
        method: 'POST',
        headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
        body: body.toString(),
        redirect: 'manual',
      });
      remember(res);
      return { status: res.status, text: await res.text(), headers: res.headers, location: res.headers.get('location') };
    },
    async signIn(secret: string) {
      await client.get('/console/login');
      return client.post('/console/login', { secret });
    },
  };
  return client;
}
