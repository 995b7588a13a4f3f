// Owns the console's webhooks view: enrolling, validating and deleting the endpoint, recent batches and resend — by
// calling the /tx/v1 webhook routes themselves (so the outbound-connection policy judges an endpoint as over REST).
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';
import { errorBox, formOf, refusedOnPage } from './views-form.js';

interface BatchWire {
  batch_id: number;
  created_at: string;
  event_count: number;
  status: string;
  status_code: number | null;
  webhook: string;
  duration?: { value: number };
}
interface ValidateWire {
  all_passed: boolean;
  results: { result: 'passed' | 'failed'; webhook: string; response: { status: number } | null }[];
}

const DONE: Record<string, string> = {
  enrolled: 'Endpoint enrolled: it receives the events that happen from now on.',
  deleted: 'Endpoint deleted: no more events are posted.',
};

/** The validate answer as the redirect carries it: passed or failed, and the endpoint's status code if it answered. */
function validated(q: Record<string, string>): string {
  const code = /^[1-5][0-9]{2}$/.test(q.code ?? '') ? q.code : undefined;
  if (q.validated === 'passed') return `Test event delivered: the endpoint answered ${code ?? '2xx'}.`;
  if (q.validated === 'failed') return code ? `Test event failed: the endpoint answered ${code}.` : 'Test event failed: no answer (or a target the policy refuses).';
  return '';
}

async function view(c: ViewCtx, errors: readonly string[] = []): Promise<ViewResult> {
  const as = c.as();
  const hooks = (await c.call('GET', '/tx/v1/webhook', as)).body as { webhook: string }[];
  const batches = ((await c.call('GET', '/tx/v1/webhook-batch', as, { query: { limit: '100' } })).body as { webhook_batches: BatchWire[] }).webhook_batches;
  const account = c.account?.handle;
  const done = /^[0-9]{1,18}$/.test(c.query.resent ?? '') ? c.query.resent : undefined;
  const test = validated(c.query);
  const hook = hooks[0]?.webhook;
  const endpoint = hook !== undefined
    ? html`<p><code>${hook}</code></p><p>${actionButton(href('/console/webhooks/validate', { account }), 'Send a test event', c.csrf)}
${actionButton(href('/console/webhooks/delete', { account }), 'Delete endpoint', c.csrf, { danger: true, confirm: `Stop posting events to ${hook}?` })}</p>`
    : html`<p class="empty">No endpoint enrolled. Events are signed (Ed25519); internal addresses are refused unless the operator allowed them (security.allow_private_targets).</p>
<form class="filters" method="post" action="${href('/console/webhooks/enrol', { account })}">${csrfField(c.csrf)}
<label>Endpoint URL<input name="endpoint" type="url" required size="60" value="${errors.length > 0 ? (c.form?.get('endpoint') ?? '') : ''}" placeholder="https://hooks.example.com/sluice"></label><button>Enrol endpoint</button></form>`;
  return {
    title: 'Webhooks',
    body: html`<h1>Webhooks</h1>${done ? html`<p class="flash">Resent as batch ${done}.</p>` : ''}${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}
${test ? html`<p class="${c.query.validated === 'passed' ? 'flash' : 'error'}">${test}</p>` : ''}
<h2>Endpoint</h2>${errorBox(errors)}${endpoint}
<h2>Recent batches (last 3 days)</h2>${table(
      ['Batch', 'Created', 'Events', 'Status', 'HTTP', 'Duration', ''],
      batches.map((b) => [
        b.batch_id,
        stamp(b.created_at),
        b.event_count,
        b.status,
        b.status_code ?? '',
        b.duration ? `${b.duration.value} ms` : '',
        hooks.length > 0 ? actionButton(href(`/console/webhooks/${b.batch_id}/resend`, { account }), 'Resend', c.csrf, { confirm: `Post the events of batch ${b.batch_id} again?` }) : '',
      ]),
      'No batches in the last 3 days.',
    )}`,
  };
}

/** POST /tx/v1/webhook?endpoint=…: the route checks the URL and the outbound-connection policy. */
async function enrol(c: ViewCtx): Promise<ViewResult> {
  const endpoint = (formOf(c).get('endpoint') ?? '').trim();
  return refusedOnPage(c, async () => {
    await c.call('POST', '/tx/v1/webhook', c.as(), { query: { endpoint } });
    return { redirect: href('/console/webhooks', { account: c.account?.handle, done: 'enrolled' }) };
  }, view);
}

/** POST /tx/v1/webhook/validate: one signed test event; what the endpoint answered comes back on the page. */
async function validate(c: ViewCtx): Promise<ViewResult> {
  return refusedOnPage(c, async () => {
    const reply = (await c.call('POST', '/tx/v1/webhook/validate', c.as())).body as ValidateWire;
    const first = reply.results[0];
    return { redirect: href('/console/webhooks', { account: c.account?.handle, validated: reply.all_passed ? 'passed' : 'failed', code: first?.response?.status }) };
  }, view);
}

async function remove(c: ViewCtx): Promise<ViewResult> {
  await c.call('DELETE', '/tx/v1/webhook', c.as());
  return { redirect: href('/console/webhooks', { account: c.account?.handle, done: 'deleted' }) };
}

async function resend(c: ViewCtx): Promise<ViewResult> {
  const reply = await c.call('POST', '/tx/v1/webhook-batch/{batch_id}/resend', c.as(), { params: { batch_id: c.params.id ?? '' } });
  return { redirect: href('/console/webhooks', { account: c.account?.handle, resent: (reply.body as { batch_id: number }).batch_id }) };
}

export const webhookViews: ViewRoute[] = [
  { method: 'GET', path: '/console/webhooks', nav: 'webhooks', view: (c) => view(c) },
  { method: 'POST', path: '/console/webhooks/enrol', nav: 'webhooks', view: enrol },
  { method: 'POST', path: '/console/webhooks/validate', nav: 'webhooks', view: validate },
  { method: 'POST', path: '/console/webhooks/delete', nav: 'webhooks', view: remove },
  { method: 'POST', path: '/console/webhooks/{id}/resend', nav: 'webhooks', view: resend },
];
