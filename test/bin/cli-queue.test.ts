// Checks `sluice queue`: list (header, sizes, ages, summary), show (readable and --json), each subcommand's --help,
// and that `queue retry` gets a deferred message attempted by a running server at once, not at its schedule.
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { formatAge, formatSize } from '../../bin/cli-queue.js';
import { firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack, tempDir, testEnv } from '../helpers/stack.js';

function cliOn(env: Record<string, string>, cwd: string, now?: () => number) {
  return async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd, ...(now ? { now } : {}) });
    return { code, out: out.join(''), err: err.join('') };
  };
}

t.test('sizes and ages read like postqueue\'s', async (t) => {
  t.same([0, 812, 1024, 1300, 10 * 1024 * 1024, 3 * 1024 ** 3].map(formatSize), ['0', '812', '1.0K', '1.3K', '10M', '3.0G']);
  t.same([-5, 45_000, 12 * 60_000, 3 * 3_600_000 + 1, 2 * 86_400_000].map(formatAge), ['0s', '45s', '12m', '3h', '2d']);
});

t.test('queue list and show', async (t) => {
  const sink = await startSink(t, { tls: false, onRcpt: (r) => (r === 'slow@rcpt.test' ? { code: 451, message: '4.3.2 come back later' } : undefined) });
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}` } });
  const cli = cliOn(testEnv(stack.dataDir), stack.dataDir, stack.clock.now);
  t.same(await cli('queue', 'list'), { code: 0, out: 'queue is empty\n', err: '' });

  const acct = await stack.createAccount('acme');
  const send = async (to: string) =>
    (await stack.api('POST', '/tx/v1/send-async', {
      key: acct.key,
      body: { personalizations: [{ to: [{ email: to }] }], from: { email: 'app@sender.test' }, subject: 'Hello there', content: [{ type: 'text/plain', value: 'x'.repeat(2000) }] },
    })).body.request_id as string;
  const slowId = await send('slow@rcpt.test');
  await stack.worker.runOnce();
  stack.clock.advance(3 * 60_000);
  const freshId = await send('fresh@rcpt.test');
  stack.clock.advance(60_000);

  const listed = await cli('queue', 'list');
  t.equal(listed.code, 0);
  const lines = listed.out.trimEnd().split('\n');
  t.match(lines[0], /^ID +STATE +SIZE +AGE +TRIES +NEXT +SENDER -> RECIPIENT$/, 'header row');
  // In the order they are due: the fresh one now, the deferred one after its 5-minute retry (±10 %).
  t.match(lines[1], /^\d+ +queued +2\.\dK +1m +0 +due +<app@sender\.test> -> <fresh@rcpt\.test>$/, 'size, age, tries, next');
  t.equal(lines[2], `    queue id ${freshId}`);
  t.match(lines[3], /^\d+ +queued +2\.\dK +4m +1 +in \d+[sm] +<app@sender\.test> -> <slow@rcpt\.test>$/, 'deferred');
  t.equal(lines[4], `    queue id ${slowId}; last reply: 451 4.3.2 come back later`);
  t.match(lines[5], /^-- 2 deliveries in 2 messages, 4\.\dK bytes: 2 queued \(1 deferred\), 0 sending, 0 held$/, 'summary line');
  t.equal(lines.length, 6);
  const limited = (await cli('queue', 'list', '--limit', '1')).out.trimEnd().split('\n');
  t.match(limited.at(-1), /^-- 2 deliveries in 2 messages, .* \(the first 1 shown; --limit N for more\)$/, 'the summary counts them all');
  const json = JSON.parse((await cli('queue', 'list', '--json')).out);
  t.match(json[1], { queue_id: slowId, state: 'queued', rcpt: 'slow@rcpt.test', sender: 'app@sender.test', attempts: 1, last_response: '451 4.3.2 come back later' });
  t.ok(json[1].size > 2000, 'size in bytes');

  const id = String(json[1].id);
  const shown = await cli('queue', 'show', id);
  t.equal(shown.code, 0);
  t.match(shown.out, new RegExp(`^delivery ${id}: queued, 1 attempt, next \\S+ \\(in \\d+[sm]\\)\\n`));
  t.match(shown.out, `\n  queue id     ${slowId}\n`);
  t.match(shown.out, '\n  kind         outbound (sender id acme|x-authuser|app@sender.test)\n');
  t.match(shown.out, '\n  from         <app@sender.test>\n  to           <slow@rcpt.test>\n');
  t.match(shown.out, '\n  subject      Hello there\n');
  t.match(shown.out, /\n {2}arrived {6}\S+ \(4m ago\)\n/);
  t.match(shown.out, new RegExp(`\\n  last reply   451 4\\.3\\.2 come back later \\(from 127\\.0\\.0\\.1\\[127\\.0\\.0\\.1\\]:${sink.port}\\)\\n`));
  t.match(shown.out, new RegExp(`\\nattempts:\\n  \\S+Z  deferred  451 4\\.3\\.2 +127\\.0\\.0\\.1\\[127\\.0\\.0\\.1\\]:${sink.port}  RCPT TO: 451 4\\.3\\.2 come back later\\n$`));
  const asJson = JSON.parse((await cli('queue', 'show', id, '--json')).out);
  t.match(asJson, { delivery: { id: Number(id), state: 'queued' }, message: { request_id: slowId, subject: 'Hello there' }, attempts: [{ outcome: 'deferred', code: 451 }] });
  t.equal((await cli('queue', 'show', '999')).code, 1);
});

t.test('every queue subcommand has its own --help', async (t) => {
  const dir = tempDir(t);
  const cli = cliOn(testEnv(dir), dir);
  for (const sub of ['list', 'show', 'retry', 'delete']) {
    const r = await cli('queue', sub, '--help');
    t.equal(r.code, 0);
    t.match(r.out, new RegExp(`^Usage: sluice queue ${sub}`), sub);
    t.notMatch(r.out, /Commands:/, `${sub}: not the whole help`);
  }
  t.match((await cli('queue', 'retry', '--help')).out, /notices the change within a second/);
  t.match((await cli('help', 'queue', 'list')).out, /^Usage: sluice queue list \[--json\] \[--limit N\]\n.*\n\nColumns: ID/);
  const group = (await cli('queue', '--help')).out;
  t.equal(group.match(/^Usage: /gm)?.length, 4, 'sluice queue --help lists the four');
  t.match((await cli('--help')).out, /^sluice .* — self-hosted mail service/, 'no command: the whole help');
});

t.test('queue retry: a running server attempts a deferred message at once, not at its schedule', async (t) => {
  t.setTimeout(60_000);
  let defer = true;
  const sink = await startSink(t, { tls: false, onRcpt: () => (defer ? { code: 451, message: '4.3.2 not yet' } : undefined) });
  const dir = tempDir(t);
  const env = { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}` };
  const server = serveBinary(t, dir, env);
  const info = await server.listening;
  const res = await fetch(`http://${info.http}/tx/v1/send-async`, {
    method: 'POST',
    headers: { 'X-Api-Key': firstKey(dir), 'Content-Type': 'application/json' },
    body: JSON.stringify({ personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }], from: { email: 'app@sender.test' }, subject: 's', content: [{ type: 'text/plain', value: 'x' }] }),
  });
  t.equal(res.status, 202);
  const deferred = await server.waitForLine((l) => l.msg === 'delivery attempt' && l.outcome === 'deferred');
  t.match(deferred, { attempt: 1, next_attempt_at: /Z$/ }, 'the next attempt is minutes away');
  defer = false;

  const retried = await cliOn({ ...testEnv(dir), ...env }, dir)('queue', 'retry', '--all');
  t.same(retried, { code: 0, out: '1 delivery due now; a running server attempts it within a second\n', err: '' });
  const exited = Date.now();
  const delivered = await server.waitForLine((l) => l.msg === 'delivery attempt' && l.outcome === 'delivered');
  t.match(delivered, { attempt: 2, rcpt: 'bob@rcpt.test' });
  // The proof that the command made it due is that the attempt came before its schedule (minutes away); how soon
  // after the command is printed, not asserted (tests never assert on timings: a loaded machine runs slow).
  const scheduled = Date.parse(deferred.next_attempt_at as string);
  t.ok(delivered.time < scheduled, `attempted ${delivered.time - exited} ms after the command, ${scheduled - delivered.time} ms before its schedule`);
  t.equal(sink.messages.length, 1);
});
