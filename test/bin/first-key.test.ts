// Checks the first API key of a data_dir through the built binary: a first start that cannot bind keeps its key
// file (the quick start with port 9464 taken), and a start whose `default` account never had its key handed over
// names the one command that makes one.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { NEW_KEY_COMMAND } from '../../bin/first-key.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { tempDir, testEnv } from '../helpers/stack.js';

/** A TCP listener on a loopback port the OS picked, standing in for another service on it. */
async function takePort(): Promise<{ port: number; free: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, free: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const subAccounts = (http: string, key: string) => fetch(`http://${http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': key } });
const hint = (l: { command?: string }) => l.command === NEW_KEY_COMMAND;

t.test('a first start that cannot bind keeps its key; after freeing the port the next start listens and the key works', async (t) => {
  const dir = tempDir(t);
  const keyFile = path.join(dir, 'initial-api-key');
  const taken = await takePort();
  const env = { SLUICE_HTTP_METRICS_LISTEN: `127.0.0.1:${taken.port}` };

  const first = serveBinary(t, dir, env);
  first.listening.catch(() => undefined);
  const created = await first.waitForLine((l) => l.key_file !== undefined);
  t.match(created, { handle: 'default', key_file: keyFile, msg: `created account "default"; its API key is in ${keyFile} (mode 0600): read it, then delete the file` });
  await exited(first.child);
  t.equal(first.child.exitCode, 2, 'the start fails: http.metrics_listen is taken');
  t.notOk(first.lines.some((l) => l.msg === 'listening'));
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600, 'the key file is there, readable by the owner only');
  const key = firstKey(dir);

  await taken.free();
  const second = serveBinary(t, dir, env);
  const info = await second.listening;
  t.match(second.lines.find((l) => l.key_file), { handle: 'default', msg: `the API key of account "default" is in ${keyFile} (mode 0600): read it, then delete the file` }, 'told again where the key is');
  t.notOk(second.lines.some(hint), 'no need to make another key');
  t.notOk(second.lines.some((l) => JSON.stringify(l).includes(key)), 'the key is in no log line');
  t.equal(firstKey(dir), key, 'the same key, not a new one');
  const res = await subAccounts(info.http, key);
  t.equal(res.status, 200, 'the key of the failed first start works');
  t.same(await res.json(), []);
  second.child.kill('SIGTERM');
  await exited(second.child);
  t.equal(second.child.exitCode, 0);
});

t.test('an account whose first key was never handed over: every start names the command until a key is made', async (t) => {
  const dir = tempDir(t);
  const keyFile = path.join(dir, 'initial-api-key');
  fs.mkdirSync(dir, { recursive: true });
  fs.mkdirSync(keyFile); // the key file cannot be written: the key made by the first start is lost

  const first = serveBinary(t, dir, {});
  await first.listening;
  t.match(first.lines.find(hint), { level: 50, handle: 'default', msg: new RegExp(`could not write its API key to ${keyFile} .*make a key with: ${NEW_KEY_COMMAND}$`) });
  first.child.kill('SIGTERM');
  await exited(first.child);

  fs.rmdirSync(keyFile);
  const second = serveBinary(t, dir, {});
  await second.listening;
  t.match(second.lines.find(hint), {
    level: 40,
    msg: `account "default" has no API key that was ever shown (the first start created it but never wrote ${keyFile}); make one with: ${NEW_KEY_COMMAND}`,
  }, 'the account exists, the key file is gone and no key was ever shown');
  t.notOk(fs.existsSync(keyFile), 'no key file is made up later');
  second.child.kill('SIGTERM');
  await exited(second.child);

  // The command as printed (minus the leading `sluice`) makes a key that works, and the hint stops.
  let out = '';
  const code = await runCli([...NEW_KEY_COMMAND.split(' ').slice(1), '--json'], { stdout: (s) => (out += s), stderr: () => {}, env: testEnv(dir), cwd: dir });
  t.equal(code, 0);
  const made = JSON.parse(out) as { key: string };
  const third = serveBinary(t, dir, {});
  const info = await third.listening;
  t.notOk(third.lines.some(hint), 'a key was made since: no hint');
  t.equal((await subAccounts(info.http, made.key)).status, 200);
  third.child.kill('SIGTERM');
  await exited(third.child);
});
