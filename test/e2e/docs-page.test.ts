// Checks the API reference page: GET /docs and each of its assets over HTTP (types, sizes, the page's own CSP, 304 on
// a matching ETag, nothing else under /docs/assets), and in a real browser (Debian's chromium through playwright-core)
// that Swagger UI renders this server's /openapi.json, showing a known path, with no CSP violation and no request
// leaving the server.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium } from 'playwright-core';
import t from 'tap';
import { DOCS_CSP } from '../../control-api/docs-page.js';
import { startStack } from '../helpers/stack.js';

const CHROMIUM = process.env.SLUICE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const DIST = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

t.test('/docs and its assets over HTTP', async (t) => {
  const stack = await startStack(t);
  const base = `http://${stack.http.host}:${stack.http.port}`;
  const page = await fetch(`${base}/docs`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.equal(page.headers.get('content-security-policy'), DOCS_CSP, 'its own CSP: scripts from self, no inline script');
  t.equal(page.headers.get('x-frame-options'), 'DENY');
  const html = await page.text();
  t.notMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script');
  t.notMatch(html, /https?:\/\//, 'nothing from another origin');
  const refs = [...html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  t.same(refs.sort(), ['/docs/assets/docs.js', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css']);

  const sizes: Record<string, number> = {
    'swagger-ui.css': fs.statSync(path.join(DIST, 'swagger-ui.css')).size,
    'swagger-ui-bundle.js': fs.statSync(path.join(DIST, 'swagger-ui-bundle.js')).size,
  };
  for (const ref of refs) {
    const name = ref.slice('/docs/assets/'.length);
    const res = await fetch(`${base}${ref}`);
    const body = Buffer.from(await res.arrayBuffer());
    t.equal(res.status, 200, ref);
    t.match(res.headers.get('content-type'), name.endsWith('.css') ? /^text\/css/ : /^text\/javascript/, `${ref} type`);
    if (sizes[name] !== undefined) t.equal(body.length, sizes[name], `${ref}: the package's file, whole`);
    else t.match(body.toString(), /SwaggerUIBundle\(\{\s*url: '\/openapi\.json'/, 'our boot file points at /openapi.json');
    const etag = res.headers.get('etag');
    t.ok(etag, `${ref} has an ETag`);
    // As a browser revalidates (fetch() would add Cache-Control: no-cache to a conditional request, which asks for the body).
    const again = await fetch(`${base}${ref}`, { headers: { 'If-None-Match': etag!, 'Cache-Control': 'max-age=0' } });
    t.equal(again.status, 304, `${ref}: 304 on its ETag`);
    await again.arrayBuffer();
  }
  for (const p of ['/docs/assets/index.html', '/docs/assets/..%2Fpackage.json', '/docs/assets/toString', '/docs/nothing']) {
    const res = await fetch(`${base}${p}`);
    t.equal(res.status, 404, `${p}: 404`);
    await res.arrayBuffer();
  }
  const slash = await fetch(`${base}/docs/`, { redirect: 'manual' });
  t.equal(slash.status, 302);
  t.equal(slash.headers.get('location'), '/docs');
  // Counted under its route template.
  const metrics = await fetch(`http://127.0.0.1:${stack.metrics!.port}/metrics`);
  t.match(await metrics.text(), /sluice_http_requests_total\{method="GET",route="\/docs\/assets\/\{name\}",status="200"\} 3\n/);
});

t.test('in chromium: Swagger UI renders /openapi.json, no CSP violation, nothing from elsewhere', { skip: !fs.existsSync(CHROMIUM) && `chromium not found at ${CHROMIUM}` }, async (t) => {
  const stack = await startStack(t);
  const base = `http://${stack.http.host}:${stack.http.port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  await page.goto(`${base}/docs`);
  // A known path of the spec, as Swagger UI lists it under its tag.
  await page.locator('.opblock-summary-path', { hasText: '/tx/v1/send' }).first().waitFor({ timeout: 30_000 });
  const paths = await page.locator('.opblock-summary-path').allTextContents();
  const spec = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, unknown>; info: { title: string } };
  t.ok(paths.length >= Object.keys(spec.paths).length, `every path is listed (${paths.length} operations for ${Object.keys(spec.paths).length} paths)`);
  t.ok(await page.getByText(spec.info.title).first().isVisible(), 'the spec title shows');
  t.same(problems, [], 'no CSP violation or page error');
  t.same(elsewhere, [], 'no request leaves the server');
});
