// Checks that every HTML answer of the HTTP listener carries a Content-Security-Policy with frame-ancestors 'none'
// (and X-Frame-Options DENY): the unsubscribe pages (valid, invalid, after the POST), the console's pages, its error
// pages and redirect bodies, and whatever any route of the OpenAPI document answers as HTML.
import t from 'tap';
import { consoleClient } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

const HTML = { Accept: 'text/html,application/xhtml+xml' };

t.test('every HTML answer forbids framing', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acme = await stack.createAccount('acme');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const checked: string[] = [];
  const check = (what: string, res: { status: number; headers: Headers }) => {
    t.match(res.headers.get('content-type'), /^text\/html/, `${what}: HTML (${res.status})`);
    t.match(res.headers.get('content-security-policy'), /(^|; )frame-ancestors 'none'(;|$)/, `${what}: CSP frame-ancestors 'none'`);
    t.match(res.headers.get('content-security-policy'), /(^|; )default-src 'none'(;|$)/, `${what}: nothing loads from elsewhere`);
    t.equal(res.headers.get('x-frame-options'), 'DENY', `${what}: X-Frame-Options`);
    checked.push(what);
  };

  // The one-click unsubscribe pages: the link of a real (dry-run) non-transactional message (which needs DKIM).
  t.equal((await stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: acme.key, body: { selector: 's1' } })).status, 201);
  const dry = await stack.api('POST', '/tx/v1/send?dry-run=true', {
    key: acme.key,
    body: {
      personalizations: [{ to: [{ email: 'reader@rcpt.test' }] }],
      from: { email: 'news@sender.test' },
      subject: 'News',
      transactional: false,
      content: [{ type: 'text/plain', value: 'hello' }],
    },
  });
  t.equal(dry.status, 200, dry.status === 200 ? 'dry run' : dry.text);
  const url = /\r\nList-Unsubscribe: <([^>]+)>/.exec(String(dry.body.data[0]).replace(/\r\n[ \t]+/g, ' '))?.[1];
  t.ok(url, 'the message has an unsubscribe link');
  const path = new URL(url!).pathname;
  const page = await fetch(base + path, { headers: HTML });
  t.equal(page.status, 200);
  t.match(await page.text(), /<form method="post"/);
  check('GET /unsubscribe/{token}', page);
  check('GET /unsubscribe/{forged}', await fetch(`${base}/unsubscribe/forged-token`, { headers: HTML }));
  const done = await fetch(`${base + path}?via=link`, { method: 'POST', headers: HTML });
  t.equal(done.status, 200);
  check('POST /unsubscribe/{token}', done);

  // The console: sign-in page, redirect bodies, views, error pages.
  check('GET /console/login', await fetch(`${base}/console/login`, { headers: HTML }));
  check('GET /console/queue (redirect to sign-in)', await fetch(`${base}/console/queue`, { headers: HTML, redirect: 'manual' }));
  const c = consoleClient(base);
  await c.signIn(acme.key);
  const cookie = [...c.jar].map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('; ');
  check('GET /console/queue', await fetch(`${base}/console/queue`, { headers: { ...HTML, cookie } }));
  check('GET /console/nothing (404 page)', await fetch(`${base}/console/nothing`, { headers: { ...HTML, cookie } }));
  check('GET /console (redirect)', await fetch(`${base}/console`, { headers: { ...HTML, cookie }, redirect: 'manual' }));

  // Every route of the document, asked for HTML with placeholder parameters: any HTML answer carries the headers.
  const doc = (await stack.api('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  let swept = 0;
  for (const [p, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) {
      if (!['get', 'post'].includes(method)) continue;
      const res = await fetch(base + p.replace(/\{[^}]+\}/g, 'x'), { method: method.toUpperCase(), headers: HTML, redirect: 'manual' });
      await res.arrayBuffer();
      swept++;
      if (/^text\/html/.test(res.headers.get('content-type') ?? '')) check(`${method.toUpperCase()} ${p}`, res);
    }
  }
  t.ok(swept > 50, `${swept} routes asked`);
  t.ok(checked.length >= 8, `${checked.length} HTML answers checked`);
});
