// Checks console sign-in's second factor over HTTP, on every backend: an account or the operator enrolled with
// `sluice console totp enroll` must give the current code with its key or token; a missing, wrong or replayed code
// is refused (and counts as a failed sign-in toward the limit), a code for an account with none is refused too, the
// next step's code works, and `disable` turns it off.
import { LOGIN_FAILURES } from '../../control-api/console/router.js';
import { base32Decode, hotp, stepOf, STEP_MS } from '../../control-api/console/totp.js';
import { onBackends } from '../helpers/backends.js';
import { cliIn } from '../helpers/cli-in.js';
import { consoleClient } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

onBackends('an enrolled account and the operator need the current code, once', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const acme = await stack.createAccount('acme');
  const bravo = await stack.createAccount('bravo');
  const base = `http://127.0.0.1:${stack.http.port}`;
  const signIn = async (secret: string, code?: string) => {
    const c = consoleClient(base);
    await c.get('/console/login');
    return c.post('/console/login', { secret, ...(code === undefined ? {} : { code }) });
  };

  const enrolled = await cliIn(stack.env, 'console', 'totp', 'enroll', '--account', 'acme', '--json');
  t.equal(enrolled.code, 0, enrolled.err);
  const { secret, uri } = JSON.parse(enrolled.out) as { secret: string; uri: string };
  t.match(uri, new RegExp(`^otpauth://totp/Sluice:acme\\?secret=${secret}&issuer=Sluice&algorithm=SHA1&digits=6&period=30$`));
  const text = await cliIn(stack.env, 'console', 'totp', 'enroll', '--account', 'bravo');
  t.match(text.out, /^authenticator enrolled for account bravo \(shown only once.*\notpauth:\/\/totp\/Sluice:bravo\?secret=([A-Z2-7]{32})&.*\nsecret \(base32\): \1\n/);
  t.equal((await cliIn(stack.env, 'console', 'totp', 'disable', '--account', 'bravo')).code, 0);
  const code = (at: number) => hotp(base32Decode(secret), stepOf(at));
  const page = await consoleClient(base).get('/console/login');
  t.match(page.text, /name="code"[^>]*autocomplete="one-time-code"/, 'the form asks for the code');

  t.equal((await signIn(acme.key)).status, 403, 'the key alone is refused');
  const wrong = await signIn(acme.key, code(stack.clock.now() + 5 * STEP_MS));
  t.equal(wrong.status, 403, 'a wrong code is refused');
  t.match(wrong.text, /wrong or used code/);
  const now = stack.clock.now();
  t.equal((await signIn(acme.key, code(now))).status, 302, 'key and current code sign in');
  t.equal((await signIn(acme.key, code(now))).status, 403, 'the same code again is refused (replay)');
  t.equal((await signIn(acme.key, code(now - STEP_MS))).status, 403, 'an earlier step\'s code too');
  stack.clock.advance(STEP_MS);
  t.equal((await signIn(acme.key, code(stack.clock.now()))).status, 302, 'the next step\'s code works');
  const bravoCode = await signIn(bravo.key, '123456');
  t.equal(bravoCode.status, 403, 'a code for an account with no authenticator is refused, not ignored');
  t.match(bravoCode.text, /no authenticator is enrolled/);
  t.equal((await signIn(bravo.key)).status, 302, 'bravo (disabled) signs in with its key alone');

  // The operator: every operator token's sign-in needs the operator's code.
  const { token } = await stack.services.console.createToken('ops', stack.clock.now());
  const op = JSON.parse((await cliIn(stack.env, 'console', 'totp', 'enroll', 'operator', '--json')).out) as { owner: string; secret: string };
  t.equal(op.owner, 'operator');
  t.equal((await signIn(token)).status, 403);
  t.equal((await signIn(token, hotp(base32Decode(op.secret), stepOf(stack.clock.now())))).status, 302);
  t.equal((await cliIn(stack.env, 'console', 'totp', 'disable', 'operator')).code, 0);
  t.equal((await signIn(token)).status, 302, 'disabled: the token alone again');
  t.equal((await cliIn(stack.env, 'console', 'totp', 'disable', 'operator')).code, 1, 'nothing to disable');
  t.equal((await cliIn(stack.env, 'console', 'totp', 'enroll')).code, 2, 'whom: operator or --account');
  t.equal((await cliIn(stack.env, 'console', 'totp', 'enroll', 'operator', '--account', 'acme')).code, 2, 'not both');
});

onBackends('wrong codes count toward the sign-in limit', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const acme = await stack.createAccount('acme');
  const { secret } = JSON.parse((await cliIn(stack.env, 'console', 'totp', 'enroll', '--account', 'acme', '--json')).out) as { secret: string };
  const c = consoleClient(`http://127.0.0.1:${stack.http.port}`);
  const right = hotp(base32Decode(secret), stepOf(stack.clock.now()));
  const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
  for (let i = 0; i < LOGIN_FAILURES; i++) {
    await c.get('/console/login');
    t.equal((await c.post('/console/login', { secret: acme.key, code: wrong })).status, 403, `wrong code ${i + 1}`);
  }
  await c.get('/console/login');
  t.equal((await c.post('/console/login', { secret: acme.key, code: right })).status, 429, 'past the limit even the right code waits');
});
