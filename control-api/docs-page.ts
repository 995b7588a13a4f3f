// Owns GET /docs: the API reference page, Swagger UI (npm swagger-ui-dist, served by Sluice from node_modules: no
// CDN, works with no internet) rendering this server's own /openapi.json, with a Content-Security-Policy of its own.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Koa from 'koa';

const require = createRequire(import.meta.url);
const DIST = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const VERSION = (require('swagger-ui-dist/package.json') as { version: string }).version;

/**
 * The page's policy: scripts and styles from Sluice only (no inline script: the page is booted by DOCS_BOOT, a file of
 * ours), the spec and "Try it out" requests to this origin only (an API key typed into Authorize goes nowhere else),
 * Swagger UI's icons as data: images, never framed. Swagger UI sets element styles through the DOM (CSSOM), which
 * style-src does not govern.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** Boots Swagger UI on #api with the server's own spec: no validator badge (it would call validator.swagger.io). */
const DOCS_BOOT = `// Sluice: boots Swagger UI on the server's own /openapi.json (served as a file: the CSP allows no inline script).
window.addEventListener('DOMContentLoaded', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#api',
    deepLinking: true,
    validatorUrl: null,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<noscript>The API reference needs JavaScript; the specification itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="api"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/docs.js"></script>
</body>
</html>
`;

/** The assets, by name: a file of swagger-ui-dist (streamed from disk: 1.7 MB stays out of the heap) or ours. */
const ASSETS: Readonly<Record<string, { type: string; file?: string; body?: string }>> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', file: path.join(DIST, 'swagger-ui.css') },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', file: path.join(DIST, 'swagger-ui-bundle.js') },
  'docs.js': { type: 'text/javascript; charset=utf-8', body: DOCS_BOOT },
};

/** Answers GET/HEAD /docs and /docs/assets/{name}; `/docs/` redirects to /docs; anything else passes on. */
export function docsPage(): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/docs' && !ctx.path.startsWith('/docs/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (ctx.path === '/docs/') {
      ctx.state.routeTemplate = '/docs';
      return ctx.redirect('/docs');
    }
    if (ctx.path === '/docs') {
      ctx.state.routeTemplate = '/docs';
      ctx.set('Content-Security-Policy', DOCS_CSP);
      ctx.set('Cache-Control', 'no-cache');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = PAGE;
      return;
    }
    const name = ctx.path.slice('/docs/assets/'.length);
    const asset = ctx.path.startsWith('/docs/assets/') && Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!asset) return next();
    ctx.state.routeTemplate = '/docs/assets/{name}';
    // The files change only with the package: its version is their validator.
    ctx.set('ETag', `"swagger-ui-dist-${VERSION}-${name}"`);
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.type = asset.type;
    // Koa judges freshness of a 2xx answer only: the status first.
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    if (asset.body !== undefined) {
      ctx.body = asset.body;
      return;
    }
    const file = asset.file!;
    ctx.length = (await fs.promises.stat(file)).size;
    ctx.body = fs.createReadStream(file);
  };
}
