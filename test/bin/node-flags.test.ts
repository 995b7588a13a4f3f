// Checks that every way of starting `sluice serve` carries its V8 flags (bin/node-flags.ts), and how a missing one is
// recognised.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { missingNodeFlags, SERVE_NODE_FLAGS } from '../../bin/node-flags.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');

t.test('npm start, the binary and the systemd unit start node with the flags', async (t) => {
  const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start ?? '';
  const shebang = read('bin/sluice.ts').split('\n')[0] ?? '';
  const unit = read('contrib/sluice.service').split('\n').find((l) => l.startsWith('ExecStart=')) ?? '';
  t.ok(SERVE_NODE_FLAGS.length > 0);
  // The flags in SERVE_NODE_FLAGS's order, each start line carrying all of them.
  const flags = SERVE_NODE_FLAGS.join(' ');
  t.match(start, new RegExp(`^node ${flags} dist/bin/sluice\\.js serve`), 'npm start');
  t.match(shebang, new RegExp(`^#!/usr/bin/env -S node ${flags}$`), 'the binary');
  t.match(unit, new RegExp(`/node ${flags} /`), 'the unit');
});

t.test('a flag counts as given on the command line or in NODE_OPTIONS, with any value and either spelling', async (t) => {
  t.same(missingNodeFlags([], ''), [...SERVE_NODE_FLAGS], 'none given');
  t.same(missingNodeFlags(['--max-semi-space-size=8', '--expose-gc'], ''), [], 'on the command line');
  t.same(missingNodeFlags(['--expose-gc'], '--enable-source-maps --max_semi_space_size=16'), [], 'in NODE_OPTIONS, underscores, another value');
  t.same(missingNodeFlags(['--max-semi-space-size=8'], ''), ['--expose-gc'], 'one of them missing');
  t.same(missingNodeFlags(['--max-old-space-size=512'], '--max-semi-space --expose-gc-as=x'), [...SERVE_NODE_FLAGS], 'other flags are not it');
});
