// Checks the first API key of a data_dir through the built binary: a first start that cannot bind (the quick start
// with port 9464 taken) fails before it creates anything, so no key is made that nobody saw; the next start, once the
// port is free, makes the key, and a third start names the same file again (first-key-lost.test.ts: a key never handed over).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { NEW_KEY_COMMAND } from '../../bin/first-key.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

/** A TCP listener on a loopback port the OS picked, standing in for another service on it. */
async function takePort(): Promise<{ port: number; free: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, free: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const subAccounts = (http: string, key: string) => fetch(`http://${http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': key } });
const hint = (l: { command?: string }) => l.command === NEW_KEY_COMMAND;

t.test('a first start that cannot bind creates nothing; after freeing the port the next start makes the key and it works', async (t) => {
  const dir = tempDir(t);
  const keyFile = path.join(dir, 'initial-api-key');
  const taken = await takePort();
  const env = { SLUICE_HTTP_METRICS_LISTEN: `127.0.0.1:${taken.port}` };

  const first = serveBinary(t, dir, env);
  first.listening.catch(() => undefined);
  await exited(first.child);
  t.equal(first.child.exitCode, 2, 'the start fails: http.metrics_listen is taken');
  t.notOk(first.lines.some((l) => l.msg === 'listening'));
  t.notOk(first.lines.some((l) => l.key_file !== undefined), 'no account made, no key file named');
  t.notOk(fs.existsSync(keyFile), 'no key file written by a start that never listened');

  await taken.free();
  const second = serveBinary(t, dir, env);
  const info = await second.listening;
  t.match(second.lines.find((l) => l.key_file), { handle: 'default', key_file: keyFile, msg: `created account "default"; its API key is in ${keyFile} (mode 0600): read it, then delete the file` });
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600, 'the key file is there, readable by the owner only');
  const key = firstKey(dir);
  t.notOk(second.lines.some(hint), 'no need to make another key');
  t.notOk(second.lines.some((l) => JSON.stringify(l).includes(key)), 'the key is in no log line');
  const res = await subAccounts(info.http, key);
  t.equal(res.status, 200, 'the key works');
  t.same(await res.json(), []);
  second.child.kill('SIGTERM');
  await exited(second.child);
  t.equal(second.child.exitCode, 0);

  const third = serveBinary(t, dir, env);
  await third.listening;
  t.match(third.lines.find((l) => l.key_file), { handle: 'default', msg: `the API key of account "default" is in ${keyFile} (mode 0600): read it, then delete the file` }, 'told again where the key is');
  t.equal(firstKey(dir), key, 'the same key, not a new one');
  third.child.kill('SIGTERM');
  await exited(third.child);
  t.equal(third.child.exitCode, 0);
});
