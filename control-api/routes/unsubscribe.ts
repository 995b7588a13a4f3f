// Owns the public unsubscribe pages: GET shows a confirmation and changes nothing; POST unsubscribes (RFC 8058).
import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../route.js';

const TokenParams = Type.Object({ token: Type.String({ maxLength: 2048 }) });

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<meta name="robots" content="noindex"><title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const html = 'text/html; charset=utf-8';
const invalid = { status: 404, type: html, body: page('Link not valid', '<p>This unsubscribe link is not valid.</p>') };

export const unsubscribeRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/unsubscribe/{token}',
    summary: 'Unsubscribe confirmation page (changes nothing: link scanners send GETs)',
    tags: ['unsubscribe'],
    auth: 'none',
    params: TokenParams,
    responses: { 200: { description: 'confirmation page', contentType: html }, 404: { description: 'invalid link' } },
    handler: async (s, { params }) => {
      const info = await s.unsubscribe.inspect(params.token);
      if (!info) return invalid;
      const action = `/unsubscribe/${encodeURIComponent(params.token)}?via=link`;
      return {
        status: 200,
        type: html,
        body: page(
          'Unsubscribe',
          `<p>Stop sending mail to <strong>${escapeHtml(info.recipient)}</strong>?</p>` +
            `<form method="post" action="${escapeHtml(action)}"><button type="submit">Unsubscribe</button></form>`,
        ),
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/unsubscribe/{token}',
    summary: 'Unsubscribe (RFC 8058 one-click POST, or the confirmation page\'s button with ?via=link)',
    tags: ['unsubscribe'],
    auth: 'none',
    params: TokenParams,
    query: Type.Object({ via: Type.Optional(Type.Literal('link')) }),
    responses: { 200: { description: 'unsubscribed', contentType: html }, 404: { description: 'invalid link' } },
    handler: async (s, { params, query }) => {
      const ok = await s.unsubscribe.run(params.token, query.via === 'link' ? 'link' : 'one-click');
      if (!ok) return invalid;
      return { status: 200, type: html, body: page('Unsubscribed', '<p>You will not receive these messages any more.</p>') };
    },
  }),
];
