// Checks the control plane's access log line: the HTTP request's own id (the X-Request-Id header) and, for a send,
// the send's MailChannels `request_id` under a distinct name, so the line of a request joins with its queue rows.
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { startServer } from '../../bin/server.js';
import { loadConfig } from '../../config/load.js';
import { openSqliteStore, type SqliteStore } from '../../storage/sqlite/store.js';
import { createClock, tempDir, testEnv } from '../helpers/stack.js';

t.test('a send logs its request_id as sendRequestId beside the httpRequestId of the request', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const logs = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const dir = tempDir(t);
  const { config } = loadConfig({ env: testEnv(dir, { SLUICE_OUTBOUND_LOCKDOWN: 'off' }), cwd: dir });
  const clock = createClock();
  let store!: SqliteStore;
  const server = await startServer({ config, logger: pino({ level: 'info' }, logs), now: clock.now, startWorker: false, openStore: (o) => (store = openSqliteStore(config.dataDir, o)) });
  t.teardown(() => server.close());
  const acct = await server.accounts.createParentWithKey({ handle: 'acme', companyName: null, now: clock.now() });
  if (!acct.ok) throw new Error('account');
  const base = `http://${server.http!.host}:${server.http!.port}`;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(base + path, {
      method,
      headers: { 'X-Api-Key': acct.apiKey, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const accessLine = (res: Response) => {
    const id = res.headers.get('x-request-id');
    const found = lines.filter((l) => l.msg === 'request' && l.httpRequestId === id);
    t.equal(found.length, 1, 'one access log line per request, found by X-Request-Id');
    return found[0]!;
  };
  const mail = {
    personalizations: [{ to: [{ email: 'bob@rcpt.test' }, { email: 'carol@rcpt.test' }] }],
    from: { email: 'app@sender.test' },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'Hi.' }],
  };

  for (const path of ['/tx/v1/send', '/tx/v1/send-async']) {
    const res = await call('POST', path, mail);
    t.equal(res.status, 202, path);
    const { request_id } = (await res.json()) as { request_id: string };
    const line = accessLine(res);
    t.equal(line.sendRequestId, request_id, `${path}: the line carries the send's request_id`);
    t.not(line.httpRequestId, request_id, 'the two ids are distinct');
    t.notOk('requestId' in line, 'no ambiguous requestId field');
    const rows = store.db.prepare('SELECT request_id FROM messages WHERE request_id = ?').all(request_id);
    t.equal(rows.length, 1, `${path}: the line joins with its queue row`);
    const log = store.db.prepare('SELECT rcpt FROM smtp_log WHERE request_id = ? ORDER BY rcpt').all(request_id);
    t.same(log, [{ rcpt: 'bob@rcpt.test' }, { rcpt: 'carol@rcpt.test' }], `${path}: and with its SMTP log rows`);
  }

  const list = await call('GET', '/tx/v1/sub-account');
  t.equal(list.status, 200);
  t.notOk('sendRequestId' in accessLine(list), 'a request that sends nothing has no sendRequestId');
  const refused = await call('POST', '/tx/v1/send', { ...mail, personalizations: [] });
  t.equal(refused.status, 400);
  t.notOk('sendRequestId' in accessLine(refused), 'a refused send queued nothing and names no request_id');
});
