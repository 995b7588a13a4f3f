// Checks how the API stops (bin/server.ts close): it takes no new connection from the moment the server begins to
// stop, and a request already under way finishes (its message queued, its 202 sent) instead of being cut.
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { openDatabase } from '../../storage/sqlite/database.js';
import { startStack } from '../helpers/stack.js';

/** Resolves 'refused' when nothing listens on the port any more, 'accepted' when a connection is taken. */
function connectOutcome(port: number): Promise<'refused' | 'accepted'> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve('accepted')));
    socket.once('error', () => resolve('refused'));
  });
}

t.test('stopping: new API connections are refused at once, a send under way is still queued and answered 202', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acme = await stack.createAccount('acme');
  const body = Buffer.from(
    JSON.stringify({
      personalizations: [{ to: [{ email: 'bob@dest.example' }] }],
      from: { email: 'app@shop.example' },
      subject: 'In flight',
      content: [{ type: 'text/plain', value: 'sent while the server stops' }],
    }),
  );
  const req = http.request({
    host: '127.0.0.1',
    port: stack.http.port,
    method: 'POST',
    path: '/tx/v1/send-async',
    headers: { 'X-Api-Key': acme.key, 'Content-Type': 'application/json', 'Content-Length': body.length, Expect: '100-continue' },
  });
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.once('error', reject);
  });
  // 100 Continue: the server has read the request's head, so the request is under way (not an idle connection).
  req.flushHeaders();
  await once(req, 'continue');

  const closing = stack.close();
  t.equal(await connectOutcome(stack.http.port), 'refused', 'a new connection is refused as soon as the stop begins');
  req.end(body);
  const res = await answered;
  t.equal(res.status, 202, `the request under way was answered: ${res.text}`);
  await closing;
  const db = openDatabase(stack.dataDir);
  t.teardown(() => db.close());
  t.same(db.prepare('SELECT subject FROM messages').all(), [{ subject: 'In flight' }], 'its message was queued');
});
