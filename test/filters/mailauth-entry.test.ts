// Checks filters/mailauth-entry.ts: mailauth's entry loads without its BIMI modules, and what stands in for them refuses to run.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import t from 'tap';
import { authenticate, sealMessage } from '../../filters/mailauth-entry.js';

const require = createRequire(import.meta.url);
const lib = path.dirname(require.resolve('mailauth'));

t.test('the entry is loaded, BIMI and its dependencies are not', async (t) => {
  t.type(authenticate, 'function');
  t.type(sealMessage, 'function');
  const loaded = Object.keys(require.cache);
  t.ok(loaded.includes(path.join(lib, 'mailauth.js')), "mailauth's entry is loaded");
  for (const dep of ['/node_modules/undici/', '/node_modules/@postalsys/vmc/', '/node_modules/fast-xml-parser/']) {
    t.notOk(loaded.some((f) => f.includes(dep)), `${dep} is not loaded`);
  }
});

t.test("the stand-ins sit where mailauth's entry requires BIMI (a mailauth upgrade that moves them fails here)", async (t) => {
  const entry = fs.readFileSync(path.join(lib, 'mailauth.js'), 'utf8');
  t.match(entry, "require('./bimi')", 'the entry requires ./bimi');
  t.match(entry, "require('./bimi/validate-svg')", 'the entry requires ./bimi/validate-svg');
  for (const file of ['bimi/index.js', 'bimi/validate-svg.js']) {
    t.ok(fs.existsSync(path.join(lib, file)), `${file} exists in mailauth`);
    const standIn = require.cache[path.join(lib, file)]?.exports as Record<string, () => unknown> | undefined;
    t.ok(standIn, `${file} is a stand-in in the module cache`);
    for (const [name, fn] of Object.entries(standIn ?? {})) t.throws(() => fn(), /BIMI is not loaded/, `${file} ${name} refuses to run`);
  }
});

t.test('authenticate still answers without BIMI (an unsigned message from a literal address)', async (t) => {
  const res = await authenticate(Buffer.from('From: a@example.com\r\nSubject: x\r\n\r\nhello\r\n'), {
    ip: '192.0.2.1',
    helo: 'client.example.com',
    sender: 'a@example.com',
    mta: 'mx.example.net',
    disableBimi: true,
    resolver: async () => {
      throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
    },
  });
  t.equal(res.dkim?.results[0]?.status.result, 'none', 'DKIM: none');
  t.equal(res.spf && res.spf.status.result, 'none', 'SPF: none');
});
