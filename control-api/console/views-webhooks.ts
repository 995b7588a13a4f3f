// Owns the console's webhooks view: the enrolled endpoint, recent batches and resend — by calling the /tx/v1
// webhook routes themselves.
import { href, html, table } from './html.js';
import { actionButton } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';

interface BatchWire {
  batch_id: number;
  created_at: string;
  event_count: number;
  status: string;
  status_code: number | null;
  webhook: string;
  duration: { value: number };
}

async function view(c: ViewCtx) {
  const as = c.as();
  const hooks = (await c.call('GET', '/tx/v1/webhook', as)).body as { webhook: string }[];
  const batches = ((await c.call('GET', '/tx/v1/webhook-batch', as, { query: { limit: '100' } })).body as { webhook_batches: BatchWire[] }).webhook_batches;
  const account = c.account?.handle;
  const done = /^[0-9]{1,18}$/.test(c.query.resent ?? '') ? c.query.resent : undefined;
  return {
    title: 'Webhooks',
    body: html`<h1>Webhooks</h1>${done ? html`<p class="flash">Resent as batch ${done}.</p>` : ''}
<h2>Endpoint</h2>${hooks.length > 0 ? html`<p><code>${hooks[0]?.webhook}</code></p>` : html`<p class="empty">No endpoint enrolled (POST /tx/v1/webhook?endpoint=…).</p>`}
<h2>Recent batches (last 3 days)</h2>${table(
      ['Batch', 'Created', 'Events', 'Status', 'HTTP', 'Duration', ''],
      batches.map((b) => [
        b.batch_id,
        b.created_at.slice(0, 19).replace('T', ' ') + 'Z',
        b.event_count,
        b.status,
        b.status_code ?? '',
        `${b.duration.value} ms`,
        hooks.length > 0 ? actionButton(href(`/console/webhooks/${b.batch_id}/resend`, { account }), 'Resend', c.csrf, { confirm: `Post the events of batch ${b.batch_id} again?` }) : '',
      ]),
      'No batches in the last 3 days.',
    )}`,
  };
}

async function resend(c: ViewCtx) {
  const reply = await c.call('POST', '/tx/v1/webhook-batch/{batch_id}/resend', c.as(), { params: { batch_id: c.params.id ?? '' } });
  return { redirect: href('/console/webhooks', { account: c.account?.handle, resent: (reply.body as { batch_id: number }).batch_id }) };
}

export const webhookViews: ViewRoute[] = [
  { method: 'GET', path: '/console/webhooks', nav: 'webhooks', view },
  { method: 'POST', path: '/console/webhooks/{id}/resend', nav: 'webhooks', view: resend },
];
