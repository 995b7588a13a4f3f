// Checks the command line as a whole (issue 38 item 6): --version, did-you-mean for commands and options, parse errors
// in our words, help that lists what each command takes (and nothing else accepted), --data-dir, a data_dir without
// Sluice data refused, the one line an old node gets, what the fast commands load, headers on tables.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { OPTIONS } from '../../bin/cli-common.js';
import { commandHelp } from '../../bin/cli-help.js';
import { MIN_NODE_MAJOR, nodeTooOld } from '../../bin/cli-node-version.js';
import { commandSpecs, GLOBAL_OPTIONS } from '../../bin/cli-usage.js';
import { VERSION } from '../../bin/version.js';
import { BIN } from '../helpers/serve-binary.js';
import { tempDir, testEnv } from '../helpers/stack.js';

/** Runs `sluice ARGV` in this process, in `cwd`, on `env` (no inherited SLUICE_ variables). */
async function cli(cwd: string, env: Record<string, string>, ...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s), env, cwd });
  return { code, out, err };
}

/** Runs the built binary with `node` (any node binary) to its end. */
function runBin(node: string, args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<{ code: number | null; out: string; err: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SLUICE_|NODE_OPTIONS$|_TAPJS_)/.test(k)));
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', node, ...args], { cwd: opts.cwd, env: { ...base, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out, err })));
}

t.test('--version, -V and version print the version', async (t) => {
  const dir = tempDir(t);
  for (const argv of [['--version'], ['-V'], ['version']]) t.same(await cli(dir, {}, ...argv), { code: 0, out: `${VERSION}\n`, err: '' }, argv.join(' '));
  t.equal((await cli(dir, {}, 'version', 'extra')).code, 2);
  t.match(await cli(dir, {}, 'queue', 'list', '--version'), { code: 2, err: /^sluice: -V\/--version stands alone/ });
  t.same(fs.readdirSync(dir), [], 'nothing created');
});

t.test('did you mean: commands, subcommands and options', async (t) => {
  const dir = tempDir(t);
  const cases: [string[], RegExp][] = [
    [['qeue', 'list'], /^sluice: unknown command "qeue" \(did you mean queue\?\)\n/],
    [['queue', 'lst'], /^sluice: unknown command "queue lst" \(did you mean queue list\?\)\n/],
    [['acounts', 'list'], /^sluice: unknown command "acounts" \(did you mean accounts\?\)\n/],
    [['queue', 'list', '--limt', '3'], /^sluice: unknown option --limt \(did you mean --limit\?\)\n/],
    [['keys', 'list', '--acount', 'acme'], /^sluice: unknown option --acount \(did you mean --account\?\)\n/],
    [['frobnicate'], /^sluice: unknown command "frobnicate"\n/],
  ];
  for (const [argv, re] of cases) {
    const r = await cli(dir, {}, ...argv);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.err, re, argv.join(' '));
    t.match(r.err, /\nRun 'sluice help' for usage\.\n$/);
  }
});

t.test('parse errors are in our words, never node:util\'s', async (t) => {
  const dir = tempDir(t);
  const cases: [string[], RegExp][] = [
    [['--config'], /^sluice: --config needs a value\n/],
    [['queue', 'list', '--limit'], /^sluice: --limit needs a value\n/],
    [['--config', '--json', 'queue', 'list'], /^sluice: --config needs a value, not the option --json \(a value that starts with "-": --config=--json\)\n/],
    [['queue', 'list', '--json=yes'], /^sluice: --json takes no value\n/],
    [['keys', 'list', '--account', 'a', '--account', 'b'], /^sluice: --account is given twice\n/],
    [['-x'], /^sluice: unknown option -x\n/],
    [['--bogus'], /^sluice: unknown option --bogus\n/],
  ];
  for (const [argv, re] of cases) {
    const r = await cli(dir, {}, ...argv);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.err, re, argv.join(' '));
    t.notMatch(r.err, /parseArgs|ERR_PARSE_ARGS|Option '|To specify an option argument/, 'not node:util\'s text');
  }
});

t.test('help lists what each command takes, and every command refuses any other option', async (t) => {
  const specs = commandSpecs();
  const known = new Set(Object.keys(OPTIONS));
  const named = new Set([...GLOBAL_OPTIONS, ...specs.flatMap((s) => [...s.options])]);
  // Every option help names is parsed, and every parsed option is named by some command's help.
  for (const o of named) t.ok(known.has(o), `--${o} (named in help) is an option the parser knows`);
  for (const o of known) t.ok(named.has(o), `--${o} is in the help of some command`);
  const dir = tempDir(t);
  for (const s of specs) {
    const words = s.words.join(' ');
    // Messages name the command by its first two words (`metrics senders`, `console totp`).
    const name = s.words.slice(0, 2).join(' ');
    // Its own --help shows each option it takes.
    const help = commandHelp(s.words) ?? '';
    for (const o of s.options) t.match(help, `--${o}`, `sluice ${words} --help shows --${o}`);
    // An unknown option: refused. A known option this command does not take: refused, naming what it takes.
    const bogus = await cli(dir, {}, ...s.words, '--no-such-option');
    t.match(bogus, { code: 2, err: /^sluice: unknown option --no-such-option/ }, `${words} --no-such-option`);
    const foreign = [...known].find((o) => !s.options.has(o) && !GLOBAL_OPTIONS.includes(o) && o !== 'to' && OPTIONS[o as keyof typeof OPTIONS].type === 'boolean');
    if (foreign === undefined) continue;
    const r = await cli(dir, {}, ...s.words, `--${foreign}`);
    t.equal(r.code, 2, `${words} --${foreign}`);
    t.match(r.err, new RegExp(`^sluice: --${foreign} is not an option of sluice ${name}(?: \\(did you mean --[a-z-]+\\?\\))?; it takes (no options of its own|--)`), `${words} --${foreign}`);
  }
  t.same(fs.readdirSync(dir), [], 'no command created anything');
  t.match(await cli(dir, {}, 'queue', 'list', '--account', 'acme'), { code: 2, err: /^sluice: --account is not an option of sluice queue list; it takes --json, --limit\n/ });
});

t.test('every command refuses a word more than its usage names, rather than ignoring it', async (t) => {
  const dir = tempDir(t);
  const counts = Object.fromEntries(commandSpecs().map((s) => [s.words.join(' '), s.positionals]));
  t.match(counts, { 'queue show': 1, 'queue list': 0, 'accounts create': 0, 'suppressions import': 1, 'console totp enroll': 1, backup: 1, 'metrics senders campaigns': 0 });
  for (const s of commandSpecs()) {
    if (s.words[0] === 'help') continue;
    const argv = [...s.words, ...Array.from({ length: s.positionals }, (_, i) => `arg${i}`), 'stray'];
    const r = await cli(dir, {}, ...argv);
    t.equal(r.code, 2, argv.join(' '));
    t.equal(r.err.split('\n')[0], `sluice: unexpected argument "stray": usage: sluice ${s.usage}`, argv.join(' '));
  }
  t.same(fs.readdirSync(dir), [], 'no command created anything');
  t.match(await cli(dir, {}, 'help', 'queue', 'retry'), { code: 0, out: /^Usage: sluice queue retry ID/ }, 'help takes command words');
});

t.test('a data_dir without Sluice data is refused, not created; --data-dir names the right one', async (t) => {
  const dir = tempDir(t);
  const env = { SLUICE_LOG_LEVEL: 'silent' };
  // Run from a directory that holds no sluice.toml: data_dir is ./data, which does not exist.
  for (const argv of [['queue', 'list'], ['keys', 'list', '--account', 'acme'], ['log', '--inbound'], ['quarantine', 'list'], ['reload'], ['accounts', 'list']]) {
    const r = await cli(dir, env, ...argv);
    t.equal(r.code, 2, argv.join(' '));
    t.equal(r.err, `sluice: configuration error: data_dir ${path.join(dir, 'data')}: holds no Sluice data (no sluice.db): run sluice where its sluice.toml is, or name it with --config FILE or --data-dir DIR (sluice serve, restore and accounts create make a new one)\n`);
    t.equal(r.out, '');
  }
  t.same(fs.readdirSync(dir), [], 'no ./data made');
  // config check reads no data: it still validates a fresh install.
  t.equal((await cli(dir, env, 'config', 'check')).code, 0);
  t.same(fs.readdirSync(dir), [], 'config check made nothing');
  // accounts create makes one, where --data-dir says (over SLUICE_DATA_DIR).
  const elsewhere = path.join(dir, 'elsewhere');
  const made = await cli(dir, { ...env, SLUICE_DATA_DIR: path.join(dir, 'wrong') }, '--data-dir', elsewhere, 'accounts', 'create', '--handle', 'acme', '--json');
  t.equal(made.code, 0, made.err);
  t.ok(fs.existsSync(path.join(elsewhere, 'sluice.db')));
  t.notOk(fs.existsSync(path.join(dir, 'wrong')));
  // The same commands find it with --data-dir (a relative one is relative to the working directory).
  t.match(await cli(dir, env, 'queue', 'list', '--data-dir', 'elsewhere'), { code: 0, out: /queue is empty/ });
  t.match(await cli(dir, env, 'accounts', 'list', '--data-dir=elsewhere'), { code: 0, out: /^HANDLE\tCOMPANY\tSTATE\tCREATED\nacme\t\tenabled\t/ });
  t.match(await cli(dir, env, 'accounts', 'list', '--data-dir', ''), { code: 2, err: /^sluice: configuration error: --data-dir: needs a directory\n$/ });
});

t.test('one JSON name for a key: accounts create and keys create both print `key`', async (t) => {
  const dir = tempDir(t);
  const env = testEnv(path.join(dir, 'data'));
  const made = JSON.parse((await cli(dir, env, 'accounts', 'create', '--handle', 'acme', '--json')).out) as Record<string, unknown>;
  t.same(Object.keys(made), ['handle', 'key']);
  const key = JSON.parse((await cli(dir, env, 'keys', 'create', '--account', 'acme', '--scope', 'inbound', '--json')).out) as Record<string, unknown>;
  t.same(Object.keys(key), ['id', 'key', 'scope']);
  t.match(made.key, /^[A-Za-z0-9_-]{32}$/);
  t.match(key.key, /^[A-Za-z0-9_-]{32}$/);
});

t.test('tables have a header line; an empty list says so instead', async (t) => {
  const dir = tempDir(t);
  const env = testEnv(path.join(dir, 'data'));
  t.equal((await cli(dir, env, 'accounts', 'create', '--handle', 'acme')).code, 0);
  t.match((await cli(dir, env, 'keys', 'list', '--account', 'acme')).out, /^ID\tSCOPE\tKEY\n\d+\tapi\t/);
  t.equal((await cli(dir, env, 'smtp-passwords', 'list', '--account', 'acme')).out, 'no SMTP passwords\n');
  t.equal((await cli(dir, env, 'smtp-passwords', 'create', '--account', 'acme')).code, 0);
  t.match((await cli(dir, env, 'smtp-passwords', 'list', '--account', 'acme')).out, /^ID\tPASSWORD\n\d+\t/);
  t.match((await cli(dir, env, 'monitors', 'create', '--account', 'acme', '--condition', 'sender_id_blocked', '--interval', '1', '--email', 'ops@acme.test')), { code: 0 });
  t.match((await cli(dir, env, 'monitors', 'list', '--account', 'acme')).out, /^ID\tCONDITION\tINTERVAL\tDELIVERY\tTO\n\d+\tsender_id_blocked\t1h\t/);
  t.equal((await cli(dir, env, 'quarantine', 'list')).out, 'quarantine is empty\n');
});

t.test('an old node gets one line, before anything else loads', async (t) => {
  // The number is package.json's engines field.
  const pkg = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as { engines: { node: string } };
  t.equal(pkg.engines.node, `>=${MIN_NODE_MAJOR}`);
  t.equal(nodeTooOld(`v${MIN_NODE_MAJOR}.0.0`, '/x/node'), undefined);
  t.equal(nodeTooOld('v26.10.0', '/x/node'), undefined);
  t.equal(
    nodeTooOld('v20.20.2', '/usr/bin/node'),
    `sluice: Node.js ${MIN_NODE_MAJOR} or newer is needed (package.json engines), this is v20.20.2 (/usr/bin/node); put a newer node first on PATH (README: Quick start)\n`,
  );
  // The real thing, with the system's node when it is an older one (Debian's: 18 or 20).
  const old = '/usr/bin/node';
  const version = fs.existsSync(old) ? (await runBin(old, ['--version'], { cwd: '/' })).out.trim() : '';
  if (!version || nodeTooOld(version, old) === undefined) {
    t.comment(`no node older than ${MIN_NODE_MAJOR} at ${old}: the binary's own run is not checked here`);
    return;
  }
  const dir = tempDir(t);
  const r = await runBin(old, [BIN, 'queue', 'list'], { cwd: dir });
  t.equal(r.code, 1);
  t.equal(r.err, nodeTooOld(version, old));
  t.equal(r.out, '');
  t.same(fs.readdirSync(dir), []);
});

t.test('version and queue list load only what they need (lazy imports)', async (t) => {
  const dir = tempDir(t);
  // A module hook that writes every URL loaded to a file (module.registerHooks: synchronous, in this thread).
  const hook = path.join(dir, 'hook.mjs');
  const log = path.join(dir, 'loaded.txt');
  fs.writeFileSync(hook, `import { registerHooks } from 'node:module'; import fs from 'node:fs';
registerHooks({ load(url, context, next) { fs.appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); } });\n`);
  const loaded = async (...argv: string[]) => {
    fs.rmSync(log, { force: true });
    const r = await runBin(process.execPath, ['--import', hook, BIN, ...argv], { cwd: dir, env: testEnv(path.join(dir, 'data')) });
    t.equal(r.code, 0, r.err);
    return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
  };
  t.equal((await cli(dir, testEnv(path.join(dir, 'data')), 'accounts', 'create', '--handle', 'acme')).code, 0);
  const version = await loaded('version');
  t.notOk(version.some((u) => /\/(config\/load|storage\/|node_modules\/)/.test(u)), `version loads no configuration, store or dependency: ${version.filter((u) => !u.startsWith('node:')).join(' ')}`);
  const queue = await loaded('queue', 'list');
  t.ok(queue.some((u) => u.endsWith('/bin/cli-queue.js')), 'queue list loads its command');
  // (control-api/console/audit-actor.js is a few lines the audit log's CLI side shares with the console.)
  const heavy = queue.filter((u) => /\/(control-api\/(?!console\/audit-actor\.js)|filters|node_modules\/(pino|mailauth|prom-client|koa|nodemailer|mailparser|pg)\/)|\/bin\/(wiring|cli-(abuse|accounts|engagement|log|inbound|quarantine|filter|console|suppressions)|backup)/.test(u));
  t.same(heavy, [], 'queue list loads no other command, the API, the filters, pino or mail libraries');
  t.notOk(queue.includes('node:http'), 'nor node:http (its ESM facade loads undici)');
});
