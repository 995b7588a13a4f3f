// Checks that everything Sluice writes under data_dir is private (files 0600, its directories 0700) whatever the umask
// and the mode of a data_dir that existed already: the built `sluice serve` on a pre-existing 0755 data_dir under
// umask 000, and a database (with its -wal and -shm) left 0644 by an older version, narrowed when opened.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../storage/sqlite/database.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;

/** Every entry under `dir` (relative, sorted) with its mode. */
const walk = (dir: string, rel = ''): [string, number][] =>
  fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((d): [string, number][] => {
    const name = rel ? `${rel}/${d.name}` : d.name;
    const own: [string, number] = [d.isDirectory() ? `${name}/` : name, mode(path.join(dir, name))];
    return d.isDirectory() ? [own, ...walk(dir, name)] : [own];
  }).sort(([a], [b]) => a.localeCompare(b));

t.test('sluice serve on a pre-existing 0755 data_dir under umask 000: every file 0600, every directory 0700', async (t) => {
  const data = path.join(tempDir(t), 'data');
  fs.mkdirSync(data);
  fs.chmodSync(data, 0o755);
  const old = process.umask(0);
  let serve;
  try {
    serve = serveBinary(t, data, { SLUICE_OUTBOUND_LOCKDOWN: 'off' });
  } finally {
    process.umask(old);
  }
  const info = await serve.listening;
  // A write, so the WAL has content while the server runs.
  const dkim = await fetch(`http://${info.http}/tx/v1/domains/sender.test/dkim-keys`, {
    method: 'POST',
    headers: { 'X-Api-Key': firstKey(data), 'Content-Type': 'application/json' },
    body: JSON.stringify({ selector: 's1' }),
  });
  t.equal(dkim.status, 201);
  const entries = walk(data);
  const names = entries.map(([n]) => n);
  for (const f of ['sluice.db', 'sluice.db-wal', 'sluice.db-shm', 'initial-api-key', 'tls/', 'tls/cert.pem', 'tls/key.pem', 'run/']) {
    t.ok(names.includes(f), `${f} is there`);
  }
  t.same(
    entries.filter(([, m]) => m !== 0o600 && m !== 0o700),
    [],
    'nothing wider than 0600/0700',
  );
  t.same(entries.filter(([n, m]) => n.endsWith('/') !== (m === 0o700)), [], 'files 0600, directories 0700');
  t.equal(mode(data), 0o755, 'the data_dir that existed keeps its own mode');
  serve.child.kill('SIGTERM');
  await exited(serve.child);
});

t.test('a database and companions left 0644 are narrowed to 0600 when opened', async (t) => {
  const data = tempDir(t);
  fs.chmodSync(data, 0o755);
  const db = openDatabase(data);
  db.prepare('CREATE TABLE t (x)').run();
  db.close();
  for (const f of ['sluice.db', 'sluice.db-wal', 'sluice.db-shm']) fs.writeFileSync(path.join(data, f), '', { flag: 'a' });
  for (const f of ['sluice.db', 'sluice.db-wal', 'sluice.db-shm']) fs.chmodSync(path.join(data, f), 0o644);
  const again = openDatabase(data);
  t.teardown(() => again.close());
  t.same(['sluice.db', 'sluice.db-wal', 'sluice.db-shm'].map((f) => mode(path.join(data, f))), [0o600, 0o600, 0o600]);
  t.same(again.prepare('SELECT count(*) AS n FROM t').get(), { n: 0 }, 'the database is intact');
});
