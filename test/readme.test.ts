// Checks that the README stays true: every configuration key, its default and env name, and the CLI help.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HELP } from '../bin/cli.js';
import { KEYS } from '../config/keys.js';
import { LIVE_KEYS } from '../bin/reload.js';

const readme = fs.readFileSync(path.resolve('README.md'), 'utf8');

t.test('README documents every configuration key with its default and env name', async (t) => {
  for (const k of KEYS) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${k.key}\` |`));
    t.ok(row, `row for ${k.key}`);
    t.match(row ?? '', k.env, `${k.key} env name`);
    t.match(row ?? '', k.defaultText, `${k.key} default`);
  }
});

t.test('README shows the current CLI help', async (t) => {
  t.ok(readme.includes(HELP.trimEnd()), 'README embeds `sluice help` verbatim');
});

t.test('README quick start: install, sink, start, the one command that authorizes a domain, a send', async (t) => {
  const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## Accounts, API keys'));
  for (const step of ['npm ci', 'SLUICE_OUTBOUND_TRANSPORT_MAP=example.com=127.0.0.1:2626 npm start', 'KEY=$(cat data/initial-api-key)',
    'npx sluice lockdown allow --account default --domain yourdomain.example', '/tx/v1/send', 'npm test']) {
    t.ok(quick.includes(step), step);
  }
});

t.test('README lists exactly the keys a reload applies live', async (t) => {
  const para = readme.slice(readme.indexOf('**Reloading.**'), readme.indexOf('Any other key keeps its'));
  const listed = [...para.matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]).filter((k) => KEYS.some((x) => x.key === k));
  t.same([...listed].sort(), [...LIVE_KEYS].sort());
});

t.test('README images exist (the console screenshots in docs/)', async (t) => {
  const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]!);
  t.ok(['queue', 'deliverability', 'senders'].every((v) => images.includes(`docs/console-${v}.png`)));
  for (const img of images) t.ok(fs.existsSync(path.resolve(img)), img);
});
