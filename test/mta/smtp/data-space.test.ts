// Checks that DATA never takes more than the machine has, on both listeners: the in-memory bound
// (smtp.max_buffered_bytes) answers a DATA past it 452 4.3.1, a disk that fills while DATA is written answers
// 452 4.3.1 with nothing kept, and a disk below queue.min_free_bytes answers MAIL FROM 452 4.3.1.
import path from 'node:path';
import { generate } from 'selfsigned';
import t, { type Test } from 'tap';
import { createBufferBudget, type BufferBudget } from '../../../mta/buffer-budget.js';
import { startSmtpListener } from '../../../mta/smtp/listener.js';
import { mxOptions } from '../../../mta/smtp/mx-listener.js';
import { dataWorkingBytes, STRUCTURE_LIMITS } from '../../../mta/smtp/session.js';
import { submissionOptions } from '../../../mta/smtp/submission-listener.js';
import type { AccountRow } from '../../../storage/ports/accounts.js';
import { createRoomCheck } from '../../../storage/disk-space.js';
import { createScratchArea, type ScratchArea } from '../../../storage/scratch.js';
import { readSource } from '../../../storage/message-source.js';
import { fillDisk, smallDisk } from '../../helpers/small-disk.js';
import { smtpTalk } from '../../helpers/smtp-talk.js';
import { tempDir } from '../../helpers/stack.js';

const pems = await generate([{ name: 'commonName', value: 'mx.sluice.test' }], { keySize: 2048, algorithm: 'sha256' });
const tls = { cert: pems.cert, key: pems.private, source: 'config' as const };
const account: AccountRow = { id: 1, handle: 'acme', company_name: null, parent_id: null, enabled: true, send_limit: null, created_at: 0, deleted_at: null, pool: null };
const authPlain = `AUTH PLAIN ${Buffer.from('\u0000acme\u0000pw').toString('base64')}`;
const ok = { code: 250, status: '2.0.0', message: 'Ok: queued as TEST' };

interface Space {
  scratch: ScratchArea;
  budget?: BufferBudget;
  hasRoom?: () => Promise<boolean>;
}

/** A listener of `kind` on `space`; what it handed on, read whole while it was handed. */
async function listener(t: Test, kind: 'mx' | 'submission', space: Space) {
  const handed: Buffer[] = [];
  const onMessage = async (m: { content: Parameters<typeof readSource>[0] }) => (handed.push(await readSource(m.content)), ok);
  const options =
    kind === 'mx'
      ? mxOptions({ hostname: 'mx.sluice.test', tls, findServedDomain: async () => ({ id: 1 }), maxMessageBytes: 10 << 20, onMessage, ...space })
      : submissionOptions({
          hostname: 'mx.sluice.test', tls, authenticate: async () => account, allowInsecureLoopbackAuth: true, onMessage, ...space,
        });
  const l = await startSmtpListener(kind, { host: '127.0.0.1', port: 0 }, options);
  t.teardown(() => l.close());
  const open = async () => {
    const s = await smtpTalk(t, l.address().port);
    await s.send('EHLO client.test');
    if (kind === 'submission') await s.send(authPlain);
    return s;
  };
  return { handed, open };
}

/** A session that has said DATA and sent the start of a message, its final dot still owed. */
async function midData(open: () => ReturnType<Awaited<ReturnType<typeof listener>>['open']>) {
  const s = await open();
  await s.send('MAIL FROM:<a@sender.test>');
  await s.send('RCPT TO:<bob@corp.test>');
  const go = await s.send('DATA');
  if (!go.startsWith('354')) throw new Error(go);
  s.write('Subject: held open\r\n\r\nfirst line\r\n');
  return s;
}

for (const kind of ['mx', 'submission'] as const) {
  t.test(`${kind}: past smtp.max_buffered_bytes a new DATA gets 452 4.3.1; the ones in progress finish, then room comes back`, async (t) => {
    const scratch = createScratchArea({ dir: tempDir(t), memoryBytes: 64 * 1024 });
    // Room for two messages' working memory (header section and sample), not three.
    const budget = createBufferBudget(2 * dataWorkingBytes(STRUCTURE_LIMITS.maxHeaderBytes) + 1000);
    const { handed, open } = await listener(t, kind, { scratch, budget });
    const a = await midData(open);
    const b = await midData(open);
    const c = await midData(open);
    t.match(await c.finish('more\r\n.\r\n'), /^452 4\.3\.1 Too many messages in progress/, 'the third waits its turn');
    t.match(await a.finish('end of a\r\n.\r\n'), /^250 2\.0\.0 /);
    t.match(await b.finish('end of b\r\n.\r\n'), /^250 2\.0\.0 /);
    t.equal(handed.length, 2, 'only the two within the bound were handed on');
    t.equal(budget.used(), 0, 'everything given back');
    const again = await midData(open);
    t.match(await again.finish('retried\r\n.\r\n'), /^250 2\.0\.0 /, 'the retry is accepted');
  });

  t.test(`${kind}: a disk that fills while DATA is written: 452 4.3.1, nothing handed on or left behind`, async (t) => {
    const disk = smallDisk(t, 1024 * 1024);
    if (!disk) return void t.pass('cannot mount a tmpfs here (needs root): scratch.test.ts and spool.test.ts cover ENOSPC');
    fillDisk(disk, 128 * 1024);
    const scratch = createScratchArea({ dir: path.join(disk, 'tmp'), memoryBytes: 16 * 1024 });
    const { handed, open } = await listener(t, kind, { scratch });
    const s = await midData(open);
    const line = 'x'.repeat(998) + '\r\n';
    for (let i = 0; i < 400; i++) s.write(line);
    t.match(await s.finish('.\r\n'), /^452 4\.3\.1 Insufficient system storage/);
    t.equal(handed.length, 0);
    t.match(await s.send('NOOP'), /^250 /, 'the session goes on');
  });

  t.test(`${kind}: below queue.min_free_bytes MAIL FROM gets 452 4.3.1 before anything is received`, async (t) => {
    const dir = tempDir(t);
    const room = createRoomCheck({ dir, minFreeBytes: Number.MAX_SAFE_INTEGER, now: Date.now });
    const { handed, open } = await listener(t, kind, { scratch: createScratchArea({ dir, memoryBytes: 1024 }), hasRoom: room.hasRoom });
    const s = await open();
    t.match(await s.send('MAIL FROM:<a@sender.test>'), /^452 4\.3\.1 Insufficient system storage/);
    t.equal(handed.length, 0);
    const enough = createRoomCheck({ dir, minFreeBytes: 1024, now: Date.now });
    t.equal(await enough.hasRoom(), true, 'a disk with room passes');
  });
}
