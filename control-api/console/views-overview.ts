// Owns the console's home, the overview: the queue's depth, deferred and held mail and its oldest message, what
// quarantine holds and today's filter verdicts — of the account (and its sub-accounts) a tenant signed in as, or of
// every account for the operator — and, for the operator only, the machine: version, listeners and their TLS,
// storage health and size, certificate expiry and the last error lines. A tenant sees none of the machine's facts.
import { formatHostPort, type HostPort } from '../../config/values.js';
import { INBOUND_VERDICTS, type InboundVerdict } from '../../storage/ports/inbound-log.js';
import { day, span, stamp } from './dates.js';
import { href, html, table, type Html } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

const DAY = 86_400_000;
/** Error lines shown (the ring keeps more: bin/error-ring.ts). */
export const ERRORS_SHOWN = 20;
/** A certificate this close to its end is shown as a warning (ACME renews at 30 days left; certbot too). */
const CERT_WARN_DAYS = 14;

/** What each verdict means, in the words of the inbound log (storage/ports/inbound-log.ts). */
const VERDICT_LABELS: Record<InboundVerdict, string> = {
  relayed: 'Relayed',
  flagged: 'Relayed, flagged as spam',
  quarantined: 'Quarantined',
  refused: 'Refused (5xx)',
  deferred: 'Deferred (4xx)',
};

const tile = (label: string, figure: string | number, o: { tone?: 'ok' | 'warn' | 'bad' | undefined; link?: string | undefined; id: string }) =>
  html`<div class="tile ${o.tone ?? ''}" data-figure="${o.id}"><span class="figure">${o.link ? html`<a href="${o.link}">${figure}</a>` : figure}</span><span class="label">${label}</span></div>`;

function bytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[i]}`;
}

/** The outbound queue of the accounts in view: tiles linking to the queue's matching list. */
async function queuePart(c: ViewCtx, now: number): Promise<Html> {
  const q = await c.services.queue.summary(await c.scope());
  const account = c.account?.handle ?? '*';
  const list = (state: string) => href('/console/queue', { account, state });
  return html`<h2>Queue</h2><div class="tiles">
${tile('waiting (queued, sending, held)', q.queued + q.sending + q.held, { id: 'waiting', link: list('waiting') })}
${tile('deferred (retried later)', q.deferred, { id: 'deferred', tone: q.deferred > 0 ? 'warn' : undefined, link: list('deferred') })}
${tile('sending now', q.sending, { id: 'sending' })}
${tile('held', q.held, { id: 'held' })}
${tile(q.oldestAt === null ? 'oldest waiting message' : `oldest waiting message, accepted ${stamp(q.oldestAt)}`, q.oldestAt === null ? '—' : span(now - q.oldestAt), { id: 'oldest' })}
</div>`;
}

/** Held in quarantine: the route's own count for an account; the store's over every account for the operator's all. */
async function heldInQuarantine(c: ViewCtx, now: number): Promise<number> {
  if (!c.account) return (await c.services.quarantine.list({ accountId: null, status: 'held', limit: 1, offset: 0 }, now)).total;
  const reply = await c.call('GET', '/inbound/v1/quarantine', c.as(), { query: { status: 'held', limit: '1', offset: '0' } });
  return (reply.body as { total: number }).total;
}

/** Quarantine and today's filter verdicts (UTC day) of the accounts in view. */
async function inboundPart(c: ViewCtx, now: number): Promise<Html> {
  const held = await heldInQuarantine(c, now);
  const since = Math.floor(now / DAY) * DAY;
  const scope = await c.scope();
  const counts = await c.services.inboundLog.verdictCounts(scope, since, since + DAY);
  const account = c.account?.handle ?? '*';
  const total = INBOUND_VERDICTS.reduce((n, v) => n + counts[v], 0);
  return html`<h2>Inbound</h2><div class="tiles">
${tile('held in quarantine', held, { id: 'quarantined', tone: held > 0 ? 'warn' : undefined, link: href('/console/quarantine', { account: c.account?.handle, status: 'held' }) })}
${tile(`recipients filtered today (${day(now)}, UTC)`, total, { id: 'filtered-today', link: href('/console/inbound-log', { account }) })}
</div>
<h3>Filter verdicts today</h3>
<div class="narrow">${table(
  ['Verdict', 'Recipients', 'Share'],
  INBOUND_VERDICTS.map((v) => [html`<span data-verdict="${v}">${VERDICT_LABELS[v]}</span>`, counts[v], total === 0 ? '' : `${((100 * counts[v]) / total).toFixed(1)} %`]),
)}</div>`;
}

/** The listeners of the configuration, each with its TLS and whether this process has it bound. */
async function machinePart(c: ViewCtx, now: number): Promise<Html> {
  const { config } = c.services;
  let health;
  try {
    health = await c.services.health();
  } catch {
    health = { storage: false, writeFailure: undefined, listeners: {} as Record<string, boolean> };
  }
  const up = (name: string) => (name in health.listeners ? (health.listeners[name] ? html`<span class="ok">listening</span>` : html`<span class="bad">not listening</span>`) : html`<span class="empty">not run by this process</span>`);
  const https = config.http.tls.enabled;
  const rows: [string, string, HostPort | undefined, string][] = [
    ['http', 'api: REST API and console', config.http.listen, https ? 'HTTPS (TLS from connect)' : 'none: plain HTTP'],
    ['http_plain', 'api: ACME HTTP-01 and redirects to HTTPS', config.http.plainListen, 'none: plain HTTP'],
    ['mx', 'mx: inbound mail', config.smtp.mx.listen, 'STARTTLS offered (RFC 3207)'],
    ['submission', 'submission: authenticated sending', config.smtp.submission.listen, config.smtp.submission.allowInsecureLoopbackAuth ? 'STARTTLS; AUTH needs it, except from loopback' : 'STARTTLS; AUTH needs it (RFC 3207 §4)'],
    ['submission_tls', 'submission: authenticated sending', config.smtp.submission.tlsListen, 'implicit TLS (RFC 8314)'],
  ];
  // As configured: port 0 is a free port the system picks at each start (tests do that), not known here.
  const address = (at: HostPort) => (at.port === 0 ? `${formatHostPort(at)} (a free port picked at start)` : formatHostPort(at));
  const listeners = rows.filter(([, , at]) => at !== undefined).map(([name, role, at, tls]) => [name, role, address(at!), tls, up(name)]);
  if (config.http.metricsListen) listeners.push(['metrics', 'Prometheus /metrics (every role)', formatHostPort(config.http.metricsListen), 'none: plain HTTP', html`<span class="empty">not reported</span>`]);

  const facts = c.services.overview;
  let size: string;
  try {
    size = facts ? bytes(await facts.storageBytes()) : 'unknown';
  } catch (err) {
    size = `unknown: ${(err as Error).message}`;
  }
  const w = health.writeFailure;
  const backend = config.storage.backend === 'postgres' ? `PostgreSQL (${new URL(config.storage.postgresUrl ?? 'postgres://localhost/').pathname.slice(1) || 'database'})` : `SQLite (${config.dataDir})`;
  const certs = facts ? await facts.certificates() : [];
  const certRows = certs.map((cert) => {
    if ('error' in cert) return [cert.use, '', '', '', html`<span class="bad">${cert.error}</span>`];
    const left = Math.floor((cert.notAfter - now) / DAY);
    const tone = left < 0 ? 'bad' : left < CERT_WARN_DAYS ? 'warn' : 'ok';
    return [cert.use, cert.names.join(', '), cert.source, day(cert.notAfter), html`<span class="${tone}" data-days-left="${left}">${left < 0 ? `expired ${-left} days ago` : `${left} days left`}</span>`];
  });
  const errors = (facts?.lastErrors() ?? []).slice(0, ERRORS_SHOWN);
  return html`<h2>This server</h2>
<div class="columns"><section><h3>Version</h3>
<dl><dt>Version</dt><dd data-fact="version">Sluice ${facts?.version ?? 'unknown'}</dd>
<dt>Process started</dt><dd>${facts ? `${stamp(facts.startedAt)} (${span(now - facts.startedAt)} ago)` : ''}</dd></dl></section>
<section><h3>Storage</h3>
<dl><dt>Backend</dt><dd data-fact="backend">${backend}</dd><dt>Size on disk</dt><dd data-fact="size">${size}</dd>
<dt>Reads</dt><dd>${health.storage ? html`<span class="ok">answer</span>` : html`<span class="bad">fail</span>`}</dd>
<dt>Writes</dt><dd data-fact="writes">${w ? html`<span class="bad">the last write failed at ${stamp(w.at)}: ${w.reason} (${w.code})</span>` : html`<span class="ok">no failure since the last success</span>`}</dd>
<dt>Checked</dt><dd>${stamp(now)} (as /readyz checks)</dd></dl></section></div>
<h3>Listeners</h3>
${table(['Listener', 'Role', 'Address', 'TLS', 'State'], listeners)}
<h3>Certificates</h3>
${table(['Used by', 'Names', 'Source', 'Expires', 'Days left'], certRows, 'No certificate is configured.')}
<h3>Last errors</h3>
${table(
  ['At', 'Level', 'Component', 'Message', 'Error'],
  errors.map((e) => [stamp(e.at), e.level, e.component ?? '', e.msg, e.err ?? '']),
  'No error logged since this process started.',
)}`;
}

async function overview(c: ViewCtx) {
  const now = c.services.now();
  const operator = c.viewer.kind === 'operator';
  const who = c.account ? (c.account.parent_id === null && c.viewer.accounts.some((a) => a.parent_id === c.account!.id) ? `${c.account.handle} and its sub-accounts` : c.account.handle) : 'every account';
  return {
    title: 'Overview',
    body: html`<h1>Overview</h1><p class="empty">Figures of ${who}, as of ${stamp(now)}.</p>
<div class="columns">${c.viewer.scopes.has('api') ? html`<section>${await queuePart(c, now)}</section>` : ''}
${c.viewer.scopes.has('inbound') ? html`<section>${await inboundPart(c, now)}</section>` : ''}</div>
${operator ? await machinePart(c, now) : ''}`,
  };
}

export const overviewViews: ViewRoute[] = [{ method: 'GET', path: '/console/overview', nav: 'overview', view: overview }];
