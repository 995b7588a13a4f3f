// Checks contrib/sluice.service: systemd-analyze verify (Debian's systemd) accepts it without a warning, and it
// keeps the hardening and the behaviour the README promises (own user, port 25 capability, reload by SIGHUP).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { BIN } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

const ANALYZE = '/usr/bin/systemd-analyze';
const UNIT = path.resolve('contrib/sluice.service');
const text = fs.readFileSync(UNIT, 'utf8');

/** `Key=value` lines of the unit, comments left out. */
const directives = text.split('\n').filter((l) => /^[A-Za-z]+=/.test(l));

t.test('the unit has the hardening and behaviour the README describes', async (t) => {
  for (const line of [
    'User=sluice',
    'StateDirectory=sluice',
    'Environment=SLUICE_DATA_DIR=/var/lib/sluice',
    'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'Restart=on-failure',
    'RestartPreventExitStatus=2',
    'ExecReload=/bin/kill -HUP $MAINPID',
    'ExecStart=/opt/sluice-node26/bin/node --max-semi-space-size=8 --expose-gc /opt/sluice/dist/bin/sluice.js serve --config /etc/sluice/sluice.toml',
  ]) {
    t.ok(directives.includes(line), line);
  }
});

t.test('systemd-analyze verify accepts the unit without a warning', { skip: !fs.existsSync(ANALYZE) && `${ANALYZE} is not installed (apt-get install systemd)` }, async (t) => {
  // verify checks that ExecStart's program exists: the copy runs this node on the built CLI instead of /opt/sluice.
  const copy = path.join(tempDir(t), 'sluice.service');
  const [node, cli] = ['/opt/sluice-node26/bin/node ', '/opt/sluice/dist/bin/sluice.js'];
  fs.writeFileSync(copy, text.replace(node, `${process.execPath} `).replace(cli, BIN));
  t.ok(fs.readFileSync(copy, 'utf8').includes(`ExecStart=${process.execPath} --max-semi-space-size=8 --expose-gc ${BIN} serve`), 'ExecStart rewritten');
  const r = spawnSync(ANALYZE, ['verify', copy], { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_COLOR: '0' } });
  t.equal(r.status, 0, r.stderr);
  // Unknown keys and bad values are only warnings (exit 0): nothing at all may be printed about the unit.
  t.equal(r.stderr.split('\n').filter((l) => l.includes('sluice.service')).join('\n'), '');
  // The check would catch a typo: the same unit with a misspelt key is reported.
  const typo = path.join(path.dirname(copy), 'typo.service');
  fs.writeFileSync(typo, fs.readFileSync(copy, 'utf8').replace('ProtectSystem=strict', 'ProtectSystm=strict'));
  const bad = spawnSync(ANALYZE, ['verify', typo], { encoding: 'utf8' });
  t.match(bad.stderr, /Unknown key 'ProtectSystm'/);
});
