// Checks that AUTH failures count per IPv6 /64: two addresses of one /64 share the counter, another /64 does not.
// The addresses are real: this file runs itself again inside a network namespace of its own (`unshare -n`, as root,
// as CI runs) whose loopback carries 2001:db8:5::1, 2001:db8:5::2 and 2001:db8:6::1; nothing leaves it.
import t from 'tap';
import { AUTH_LIMITS } from '../../mta/smtp/auth-throttle.js';
import { captureLogs } from '../helpers/log-capture.js';
import { startStack } from '../helpers/stack.js';
import { smtpTalk } from '../helpers/smtp-talk.js';

const INSIDE = 'SLUICE_TEST_IN_NETNS';
const ADDRESSES = ['2001:db8:5::1', '2001:db8:5::2', '2001:db8:6::1'];

if (process.env[INSIDE] !== '1') {
  if (process.getuid?.() !== 0) {
    // CI runs as root; a machine that cannot make a namespace says so instead of passing silently.
    t.fail('needs root for unshare -n (a network namespace with IPv6 addresses on loopback)');
  } else {
    const setup = ['ip link set lo up', ...ADDRESSES.map((a) => `ip -6 addr add ${a}/128 dev lo nodad`), 'exec "$0" "$@"'].join(' && ');
    void t.spawn('unshare', ['-n', 'sh', '-c', setup, process.execPath, import.meta.filename], { env: { ...process.env, [INSIDE]: '1' } }, 'in a network namespace');
  }
} else {
  t.test('two addresses of one /64 share the AUTH failure counter; another /64 does not', async (t) => {
    const logs = captureLogs('info');
    const stack = await startStack(t, {
      logger: logs.logger,
      env: { SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '[::1]:0', SLUICE_SMTP_SUBMISSION_AUTH_FAILURE_DELAY_MS: '0' },
    });
    const acct = await stack.createAccount('acme');
    const pw = await stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
    if (!pw.ok) throw new Error('password');
    const port = stack.submissionTls!.port;
    const auth = async (from: string, user: string, pass: string) => {
      const s = await smtpTalk(t, port, { host: '::1', localAddress: from, implicitTls: true });
      await s.send('EHLO client.test');
      const reply = await s.send(`AUTH PLAIN ${Buffer.from(`\0${user}\0${pass}`).toString('base64')}`);
      s.close();
      return reply;
    };
    // Guesses at many user names from 2001:db8:5::1 use up the /64's failures…
    for (let i = 0; i < AUTH_LIMITS.perAddress; i++) t.match(await auth('2001:db8:5::1', `ghost${i}`, 'x'), /^535 5\.7\.8 /);
    // …so 2001:db8:5::2, in the same /64, is refused too (a host cannot start afresh by changing its low bits)…
    t.match(await auth('2001:db8:5::2', 'acme', pw.value.password), /^421 4\.7\.0 Too many failed authentication attempts/);
    t.match(logs.lines.at(-1), { msg: 'auth refused: too many failures from this address', ip: '2001:db8:5::2', network: '2001:db8:5:0::/64', counter: 'address' });
    // …while another /64 is not.
    t.match(await auth('2001:db8:6::1', 'acme', pw.value.password), /^235 /);
  });
}
