// Checks the console's sign-in against login CSRF by cookie tossing (issue 31 finding 7): the form's token must be one
// the server minted (HMAC, within the hour), not merely a cookie equal to the field; under HTTPS the cookies are
// `__Host-` named (Secure, Path=/, no Domain), and the plain names are not read there.
import t from 'tap';
import { consoleClient } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

/** A sign-in post with exactly this Cookie header and _csrf field, as a planted cookie and a forged form make it. */
async function post(base: string, cookie: string, csrf: string, secret: string) {
  const res = await fetch(`${base}/console/login`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, secret }).toString(),
    redirect: 'manual',
  });
  return { status: res.status, text: await res.text(), cookies: res.headers.getSetCookie() };
}

const signedIn = (cookies: string[]) => cookies.some((c) => /^(__Host-)?sluice_console=[^;]/.test(c));

t.test('over plain HTTP: a planted cookie and field pair is refused; a token the server minted signs in', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const base = `http://127.0.0.1:${stack.http.port}`;

  const planted = await post(base, 'sluice_console_login=abc', 'abc', a.key);
  t.equal(planted.status, 403, 'cookie tossing: sluice_console_login=abc with _csrf=abc');
  t.match(planted.text, /The sign-in form expired; try again\./, 'the same refusal as a missing token');
  t.notOk(signedIn(planted.cookies), 'no session');

  // A well-formed token the server did not mint (or minted, then altered) is refused alike.
  const c = consoleClient(base);
  await c.get('/console/login');
  const minted = c.csrf();
  t.match(minted, /^[A-Za-z0-9_-]{22}\.\d+\.[A-Za-z0-9_-]{22}$/);
  const [nonce, issued, mac] = minted.split('.') as [string, string, string];
  const other = `${nonce.slice(0, -2)}AA.${issued}.${mac}`;
  const altered = await post(base, `sluice_console_login=${other}`, other, a.key);
  t.equal(altered.status, 403, 'another nonce under the same MAC');
  const later = `${nonce}.${Number(issued) + 3_600_000}.${mac}`;
  t.equal((await post(base, `sluice_console_login=${later}`, later, a.key)).status, 403, 'another time under the same MAC');

  // The server's own token, cookie and field alike, signs in; an hour later the same form has expired.
  const ok = await c.post('/console/login', { secret: a.key });
  t.equal(ok.status, 302);
  t.ok(signedIn(ok.headers.getSetCookie()));
  t.match(ok.headers.getSetCookie().find((x) => x.startsWith('sluice_console='))!, /; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=43200$/);
  const stale = consoleClient(base);
  await stale.get('/console/login');
  stack.clock.advance(3_600_001);
  t.equal((await stale.post('/console/login', { secret: a.key })).status, 403, 'a form older than an hour');
  await stale.get('/console/login');
  t.equal((await stale.post('/console/login', { secret: a.key })).status, 302, 'a fresh form then works');
});

t.test('under HTTPS the cookies are __Host- named, Secure, Path=/; the plain names are not read', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_HTTP_PUBLIC_URL: 'https://mail.example.test' } });
  const a = await stack.createAccount('acme');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const c = consoleClient(base);
  const login = await c.get('/console/login');
  t.match(login.headers.getSetCookie()[0], /^__Host-sluice_console_login=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=3600$/);
  const ok = await c.signIn(a.key);
  t.equal(ok.status, 302);
  const session = ok.headers.getSetCookie().find((x) => x.startsWith('__Host-sluice_console='))!;
  t.match(session, /^__Host-sluice_console=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=43200$/);
  t.notOk(session.includes('Domain='), 'no Domain (RFC 6265bis §4.1.3.2)');
  t.match(ok.headers.getSetCookie().find((x) => x.startsWith('__Host-sluice_console_login='))!, /^__Host-sluice_console_login=; Path=\/; .*Max-Age=0$/, 'the form token is dropped');
  t.equal((await c.get('/console/queue')).status, 200, 'the __Host- session works');

  // A session or a form token under the plain names (which a sibling subdomain could set) counts for nothing here.
  const sid = c.jar.get('__Host-sluice_console')!;
  const plain = await fetch(`${base}/console/queue`, { headers: { cookie: `sluice_console=${sid}` }, redirect: 'manual' });
  t.equal(plain.status, 302, 'sluice_console is not the session under HTTPS');
  const f = consoleClient(base);
  await f.get('/console/login');
  const token = f.csrf();
  t.equal((await post(base, `sluice_console_login=${token}`, token, a.key)).status, 403, 'nor sluice_console_login the form token');
  t.equal((await post(base, '__Host-sluice_console_login=abc', 'abc', a.key)).status, 403, 'a made-up __Host- pair neither');
  t.equal((await post(base, `__Host-sluice_console_login=${token}`, token, a.key)).status, 302);
});
