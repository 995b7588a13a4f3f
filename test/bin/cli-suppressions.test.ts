// Checks `sluice suppressions import|export` on both backends, next to a running server on the same store: CSV with a
// header row, all rows or none (each bad row named by its line), already listed entries skipped, quoted notes kept,
// the export written whole and private with --out, and accounts.max_suppressions bounding the list and the file.
import fs from 'node:fs';
import path from 'node:path';
import { onBackends } from '../helpers/backends.js';
import { runCli } from '../../bin/cli.js';
import { startStack } from '../helpers/stack.js';

onBackends('sluice suppressions import|export', async (t, backend) => {
  const stack = await startStack(t, { backend, env: { SLUICE_ACCOUNTS_MAX_SUPPRESSIONS: '4' } });
  const acme = await stack.createAccount('acme');
  const cli = async (...argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runCli(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s), env: stack.env, cwd: stack.dataDir, now: stack.clock.now });
    return { code, out, err };
  };
  const file = (name: string, text: string) => {
    const p = path.join(stack.dataDir, name);
    fs.writeFileSync(p, text);
    return p;
  };
  const listed = async () => (await stack.store.suppressions.list(acme.id, { limit: 100, offset: 0 })).map((r) => `${r.recipient}/${r.source}/${r.transactional ? 't' : ''}${r.non_transactional ? 'n' : ''}/${r.notes ?? ''}`).sort();

  t.same(await cli('suppressions', 'export', '--account', 'acme'), { code: 0, out: 'recipient,suppression_types,source,notes,sender,created_at\r\n', err: '' }, 'an empty list: the header row');

  const bad = file('bad.csv', 'recipient,source\nann@example.com,api\nnot-an-address,api\ncarol@example.com,rumour\n');
  const refused = await cli('suppressions', 'import', bad, '--account', 'acme');
  t.equal(refused.code, 1);
  t.match(refused.err, /nothing imported:\n {2}line 3: recipient: invalid email address\n {2}line 4: source: must be one of api, /);
  t.same(await listed(), [], 'nothing stored');
  t.match(await cli('suppressions', 'import', file('col.csv', 'email\nann@example.com\n'), '--account', 'acme'), { code: 1, err: /unknown column "email" in the header row/ });

  // Excel's BOM, CRLF, a quoted note with a comma, a quote and a line break; a row repeated in the file.
  const good = file('good.csv', '\ufeffRecipient,Suppression_Types,Source,Notes\r\nAnn@Example.com,transactional;non-transactional,hard_bounce,"said ""no"", twice\nby phone"\r\nbob@example.com,,,\r\nbob@example.com,,api,\r\n');
  t.same(await cli('suppressions', 'import', good, '--account', 'acme'), {
    code: 0,
    out: 'imported 2 entries into acme; 1 skipped (already listed with that source, or repeated in the file)\n',
    err: '',
  });
  t.same(await listed(), ['ann@example.com/hard_bounce/tn/said "no", twice\nby phone', 'bob@example.com/api/n/']);
  t.same(JSON.parse((await cli('suppressions', 'import', good, '--account', 'acme', '--json')).out), { account: 'acme', added: 0, skipped: 3 }, 'imported again: nothing added');

  const out = path.join(stack.dataDir, 'export.csv');
  t.same(await cli('suppressions', 'export', '--account', 'acme', '--out', out), { code: 0, out: `exported 2 entries of acme to ${out}\n`, err: '' });
  const csv = fs.readFileSync(out, 'utf8');
  t.equal(fs.statSync(out).mode & 0o777, 0o600, 'private: it holds people\'s addresses');
  t.equal(csv, (await cli('suppressions', 'export', '--account', 'acme')).out, '--out writes what stdout shows');
  t.match(csv, /^recipient,suppression_types,source,notes,sender,created_at\r\n/);
  t.match(csv, /ann@example\.com,transactional;non-transactional,hard_bounce,"said ""no"", twice\nby phone",,2026-11-22T12:00:00\.000Z\r\n/);
  const again = await cli('suppressions', 'import', out, '--account', 'acme');
  t.match(again, { code: 0, out: /imported 0 entries into acme; 2 skipped[^]*created_at column is not kept/ }, 'an export imports back to the same list');

  // accounts.max_suppressions = 4: the list may not pass it, nor may a file hold more.
  const three = file('three.csv', 'recipient\ncarol@example.com\ndave@example.com\nerin@example.com\n');
  t.match(await cli('suppressions', 'import', three, '--account', 'acme'), { code: 1, err: /would hold more than 4 suppression entries \(accounts\.max_suppressions\)/ });
  const five = file('five.csv', 'recipient\n' + ['a', 'b', 'c', 'd', 'e'].map((x) => `${x}@example.com`).join('\n'));
  t.match(await cli('suppressions', 'import', five, '--account', 'acme'), { code: 1, err: /5 entries; an account holds at most 4/ });
  t.equal((await listed()).length, 2, 'nothing stored');

  t.match(await cli('suppressions', 'import', '--account', 'acme'), { code: 2, err: /usage: sluice suppressions import FILE/ });
  t.match(await cli('suppressions', 'import', good), { code: 2, err: /--account H is required/ });
  t.match(await cli('suppressions', 'export', '--account', 'acme', '--json'), { code: 2, err: /--json/ }, 'an option export does not take is refused, not ignored');
  t.match(await cli('suppressions', 'import', good, '--account', 'acme', '--out', 'x.csv'), { code: 2, err: /--out/ });
  t.match(await cli('suppressions', 'export', '--account', 'nosuch'), { code: 1, err: /no account "nosuch"/ });
  t.match(await cli('suppressions', 'import', path.join(stack.dataDir, 'missing.csv'), '--account', 'acme'), { code: 1, err: /missing\.csv/ });
});
