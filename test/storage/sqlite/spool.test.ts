// Checks the spool on real files: durable write (temp name, rename), streams back, release, the sweep of orphans and
// interrupted writes, file modes, and a full disk — a real tmpfs, and an injected ENOSPC at the write call.
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { createSpool, isDiskFull, type SpoolFileOps } from '../../../storage/sqlite/spool.js';
import { fillDisk, smallDisk } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/stack.js';

const bytes = (n: number, seed = 0) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 13 + seed) % 253));
const collect = async (r: Readable) => Buffer.concat(await r.toArray());
/** Every file under dir, relative, sorted (temp files included). */
const files = (dir: string) => (fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]) : []).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();

t.test('write → a private file under <2 hex>/<id>, readable from any offset; release removes it', async (t) => {
  const dir = path.join(tempDir(t), 'spool');
  const spool = createSpool({ dir });
  const data = bytes(300_000);
  const ref = await spool.write(Readable.from([data.subarray(0, 100_000), data.subarray(100_000)]));
  t.match(ref.key, /^[0-9a-f]{2}\/[0-9a-f]{24}$/);
  t.equal(ref.size, data.length);
  t.same(files(dir), [ref.key], 'one file, no temp name left');
  t.equal(fs.statSync(spool.pathOf(ref)).mode & 0o777, 0o600, 'file 0600');
  t.equal(fs.statSync(path.dirname(spool.pathOf(ref))).mode & 0o777, 0o700, 'directory 0700');
  t.ok((await collect(await spool.open(ref))).equals(data));
  t.ok((await collect(await spool.open(ref, 299_990))).equals(data.subarray(299_990)));
  const small = await spool.write(Buffer.from('hello'));
  t.equal((await collect(await spool.open(small))).toString(), 'hello');
  t.same((await spool.list()).map((r) => r.key).sort(), [ref.key, small.key].sort());
  await spool.release(ref);
  await spool.release(ref);
  t.equal(await spool.has(ref), false);
  await t.rejects(spool.open(ref), { code: 'ENOENT' }, 'a released body is gone');
  t.throws(() => spool.pathOf({ key: '../../etc/passwd' }), /not a spool key/, 'keys are never paths');
});

t.test('a source that fails mid-write leaves nothing, not even its temp file', async (t) => {
  const dir = path.join(tempDir(t), 'spool');
  const spool = createSpool({ dir });
  const source = new Readable({ read() {} });
  const pending = spool.write(source);
  source.push(bytes(100_000));
  await new Promise((r) => setImmediate(r));
  source.destroy(new Error('client went away'));
  await t.rejects(pending, /client went away/);
  t.same(files(dir), []);
});

t.test('sweep: interrupted writes and bodies no message names go once older than the grace; named or young ones stay', async (t) => {
  const dir = path.join(tempDir(t), 'spool');
  const spool = createSpool({ dir });
  const named = await spool.write(Buffer.from('named'));
  const orphan = await spool.write(Buffer.from('orphan'));
  const young = await spool.write(Buffer.from('young orphan'));
  // What a kill -9 between the write and its fsync/rename leaves: a temp file.
  const tempFile = path.join(dir, named.key.slice(0, 2), '.0123456789abcdef01234567.tmp');
  fs.writeFileSync(tempFile, 'half');
  const old = new Date(Date.now() - 3_600_000);
  for (const f of [spool.pathOf(named), spool.pathOf(orphan), tempFile]) fs.utimesSync(f, old, old);
  const asked: string[] = [];
  const removed = await spool.sweep(Date.now() - 600_000, (keys) => {
    asked.push(...keys);
    return new Set(keys.filter((k) => k === named.key));
  });
  t.equal(removed, 2, 'the orphan and the temp file');
  t.same(asked.sort(), [named.key, orphan.key].sort(), 'only old bodies are looked up');
  t.ok(await spool.has(named));
  t.notOk(await spool.has(orphan));
  t.ok(await spool.has(young), 'younger than the grace: maybe written and not yet committed');
  t.notOk(fs.existsSync(tempFile));
});

t.test('disk full (a 2 MB tmpfs): write rejects with ENOSPC and leaves nothing half-stored', async (t) => {
  const disk = smallDisk(t, 2 * 1024 * 1024);
  if (!disk) return void t.pass('cannot mount a tmpfs here (needs root): the injected ENOSPC below covers it');
  const spool = createSpool({ dir: path.join(disk, 'spool') });
  const kept = await spool.write(bytes(10_000));
  fillDisk(disk, 300 * 1024);
  const err = await spool.write(Readable.from([bytes(500_000), bytes(500_000, 1)])).catch((e: unknown) => e);
  t.ok(isDiskFull(err), `ENOSPC: ${String(err)}`);
  t.same(files(path.join(disk, 'spool')), [kept.key], 'only the body written before');
  t.ok((await collect(await spool.open(kept))).equals(bytes(10_000)), 'which is intact');
});

t.test('disk full injected at the spool\'s write call: same outcome', async (t) => {
  const dir = path.join(tempDir(t), 'spool');
  let written = 0;
  const ops: SpoolFileOps = {
    open: (file, flags, mode) => fs.promises.open(file, flags, mode),
    write: async (fh, chunk) => {
      if (written + chunk.length > 200_000) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      written += chunk.length;
      await fh.write(chunk);
    },
  };
  const spool = createSpool({ dir, ops });
  const err = await spool.write(Readable.from(Array.from({ length: 10 }, (_, i) => bytes(64 * 1024, i)))).catch((e: unknown) => e);
  t.ok(isDiskFull(err));
  t.same(files(dir), [], 'the temp file was removed');
});
