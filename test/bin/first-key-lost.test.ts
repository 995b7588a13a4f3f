// Checks, through the built binary, a data_dir whose `default` account never had its first key handed over (the key
// file could not be written): every start names the one command that makes a key, until one is made.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { NEW_KEY_COMMAND } from '../../bin/first-key.js';
import { exited, serveBinary } from '../helpers/serve-binary.js';
import { tempDir, testEnv } from '../helpers/stack.js';

const subAccounts = (http: string, key: string) => fetch(`http://${http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': key } });
const hint = (l: { command?: string }) => l.command === NEW_KEY_COMMAND;

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
