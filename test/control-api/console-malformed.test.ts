// Checks that no Cookie header makes the console answer 5xx (issue 23 item 4): every console route, GET and POST,
// signed in as a tenant and as the operator, with malformed, huge, non-ASCII and duplicate cookies; and that a path
// parameter that is not valid percent-encoding is a 404.
import http from 'node:http';
import t from 'tap';
import { CONSOLE_VIEWS } from '../../control-api/console/views.js';
import { consoleClient } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

/** A string whose UTF-8 bytes Node sends as they are (header values go out as latin1). */
const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

/** Cookie headers for a session id: each holds something malformed, most next to the valid session cookie. */
function cookieHeaders(sid: string): string[] {
  return [
    `a=%zz; sluice_console=${sid}`,
    'sluice_console=%zz',
    `sluice_console=${sid}%zz`,
    '=',
    `=; sluice_console=${sid}`,
    '; ;;=;a; =x',
    'sluice_console',
    'sluice_console=',
    `a=${'%'.repeat(4000)}; sluice_console=${sid}`,
    `sluice_console=${'%E0%A4%A'.repeat(500)}`,
    `a=${'x'.repeat(12_000)}; sluice_console=${sid}`,
    utf8(`a=用户😀\u202E; sluice_console=${sid}`),
    utf8(`sluice_console=${sid}é`),
    `a=\xe9\xff\xfe; sluice_console=${sid}`,
    `sluice_console=bogus; sluice_console=${sid}`,
    `sluice_console=${sid}; sluice_console=bogus`,
    `sluice_console=${sid}; sluice_console=${sid}`,
    `sluice_console="${sid}"`,
    `sluice_console=${sid}%00`,
    `__proto__=x; constructor=y; hasOwnProperty=z; sluice_console=${sid}`,
    `sluice_console_login=%zz; sluice_console_login=; sluice_console=${sid}`,
    // Past Node's 16 KiB header limit: the parser's own 431, not the console.
    `a=${'x'.repeat(20_000)}; sluice_console=${sid}`,
  ];
}

t.test('no malformed Cookie header makes a console route answer 5xx', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const signedIn = async (secret: string) => {
    const c = consoleClient(base);
    const res = await c.signIn(secret);
    if (res.status !== 302) throw new Error(`sign-in: ${res.status}`);
    await c.get('/console/queue'); // picks up the session's CSRF token
    return { sid: c.jar.get('sluice_console')!, csrf: c.csrf() };
  };
  const sessions = {
    tenant: await signedIn(acme.key),
    operator: await signedIn((await stack.services.console.createToken('cookie test', stack.clock.now())).token),
  };

  const send = (method: string, path: string, cookie: string, form?: Record<string, string>) =>
    new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
      const body = form ? new URLSearchParams(form).toString() : undefined;
      const headers: Record<string, string | number> = { cookie };
      if (body !== undefined) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) });
      const req = http.request({ host: '127.0.0.1', port: stack.http.port, method, path, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const fill = (path: string) => path.replace(/\{[a-z_]+\}/g, '1');
  const gets = ['/console', '/console/', '/console/login', ...CONSOLE_VIEWS.filter((v) => v.method === 'GET').map((v) => fill(v.path))];
  const posts = ['/console/login', ...CONSOLE_VIEWS.filter((v) => v.method === 'POST').map((v) => fill(v.path)), '/console/logout'];
  t.ok(gets.length >= 10 && posts.length >= 8, `${gets.length} GET and ${posts.length} POST routes`);

  const failures: string[] = [];
  let requests = 0;
  for (const [who, s] of Object.entries(sessions)) {
    // A malformed neighbour does not sign anyone out; a malformed session cookie is no session.
    t.equal((await send('GET', '/console/queue', `a=%zz; sluice_console=${s.sid}`)).status, 200, `${who}: a=%zz beside the session`);
    t.match(await send('GET', '/console/queue', 'sluice_console=%zz'), { status: 302, location: '/console/login' }, `${who}: sluice_console=%zz`);
    for (const [method, paths] of [['GET', gets], ['POST', posts]] as const) {
      for (const path of paths) {
        for (const cookie of cookieHeaders(s.sid)) {
          // A second a request, as a client's would (a 429 of the sign-in throttle, which counts failed sign-ins per
          // network, is no 5xx either).
          stack.clock.advance(1_000);
          const res = await send(method, path, cookie, method === 'POST' ? { _csrf: s.csrf, secret: 'not-a-key' } : undefined);
          requests++;
          if (res.status >= 500) failures.push(`${who} ${method} ${path} Cookie: ${cookie.slice(0, 60)} → ${res.status}`);
        }
      }
    }
  }
  t.ok(requests >= 600, `sent ${requests} requests`);
  t.same(failures, [], 'no 5xx');
});

t.test('a console path parameter that is not valid percent-encoding is a 404', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const c = consoleClient(`http://127.0.0.1:${stack.http.port}`);
  t.equal((await c.signIn(acme.key)).status, 302);
  const templated = CONSOLE_VIEWS.filter((v) => v.path.includes('{'));
  t.ok(templated.length >= 4, `${templated.length} routes with parameters`);
  for (const v of templated) {
    for (const bad of ['%zz', '%E0%A4%A', '%']) {
      const path = v.path.replace(/\{[a-z_]+\}/g, bad);
      const res = v.method === 'GET' ? await c.get(path) : await c.post(path, {});
      t.equal(res.status, 404, `${v.method} ${path}`);
    }
  }
});
