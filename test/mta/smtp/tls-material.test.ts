// Checks TLS material shared through the store (PostgreSQL's way; run on every backend's settings): two nodes with
// data_dirs of their own serve one self-signed pair, an ACME renewal installed by one reaches the other's next
// check, the account key and the HTTP-01 tokens are the same everywhere, an install moved from SQLite keeps its
// files' pair, and no key material reaches the log.
import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';
import { loadConfig } from '../../../config/load.js';
import { storeAcmeChallenges, storeTlsMaterial, TLS_SETTINGS } from '../../../mta/smtp/tls-material.js';
import { certInfo, createTlsSource } from '../../../mta/smtp/tls.js';
import { captureLogs } from '../../helpers/log-capture.js';
import { tempDir, testEnv } from '../../helpers/stack.js';
import { contract } from '../../storage/contract/backends.js';

/** A node's configuration: its own data_dir, ACME on (a CA that is never called here). */
function nodeConfig(dataDir: string) {
  return loadConfig({ env: testEnv(dataDir, { SLUICE_ACME_DIRECTORY_URL: 'https://ca.invalid/dir' }), cwd: dataDir }).config;
}

/** A pair as ACME would install it, for the SMTP host name. */
async function issued(name: string) {
  const pems = await generate([{ name: 'commonName', value: name }], { keySize: 2048, algorithm: 'sha256', extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }] });
  return { cert: pems.cert, key: pems.private };
}

contract('two nodes serve one certificate; a renewal by one reaches the other at its next check', async (t, { store, reopen }) => {
  const logs = captureLogs('debug');
  const nodes = [store, await reopen()].map((s) => ({ settings: s.settings, config: nodeConfig(tempDir(t)) }));
  const [a, b] = await Promise.all(
    nodes.map((n) => createTlsSource(() => n.config, storeTlsMaterial(n.settings, n.config.dataDir), logs.logger)),
  );
  t.same(new Set([a!.current().source, b!.current().source]), new Set(['generated', 'stored']), 'one node made the pair, the other read it');
  t.equal(a!.current().cert, b!.current().cert, 'the same self-signed certificate on both');
  for (const n of nodes) t.notOk(fs.existsSync(path.join(n.config.dataDir, 'tls')), 'nothing written to a data_dir');

  // The ACME leader installs a pair: its own source is told at once (installed()); the other notices at its check.
  const pair = await issued('mx.sluice.test');
  const leader = storeTlsMaterial(nodes[0]!.settings, nodes[0]!.config.dataDir);
  await leader.installAcmePair(pair);
  t.same(await b!.refresh(), { changed: true });
  t.equal(b!.current().source, 'acme');
  t.equal(certInfo(b!.current().cert).fingerprint, certInfo(pair.cert).fingerprint, 'the other node serves the renewal');
  t.same(await b!.refresh(), { changed: false }, 'nothing new at the next check');

  // A half-bad pair (a key of another certificate) is refused; the node keeps serving what it had.
  const other = await issued('mx.sluice.test');
  await leader.installAcmePair({ cert: other.cert, key: pair.key });
  const refused = await b!.refresh();
  t.match(refused, { changed: false, error: /^acme key \(setting acme_pair\): does not belong to the certificate/ });
  t.equal(b!.current().cert, pair.cert);

  // The account key is made once and read by every node; so are the HTTP-01 tokens.
  const keyA = await leader.acmeAccountKey(async () => 'key-a');
  const keyB = await storeTlsMaterial(nodes[1]!.settings, nodes[1]!.config.dataDir).acmeAccountKey(async () => 'key-b');
  t.equal(keyA, 'key-a');
  t.equal(keyB, 'key-a', 'the second node finds the first one\'s account');
  const [ca, cb] = nodes.map((n) => storeAcmeChallenges(n.settings));
  await ca!.set('tok_EN-1', 'tok_EN-1.thumb');
  t.equal(await cb!.get('tok_EN-1'), 'tok_EN-1.thumb', 'a token set by the ordering node is answered by another');
  t.equal(await cb!.get('../acme_pair'), undefined, 'a name that is no token is not looked up');
  await ca!.delete('tok_EN-1');
  t.equal(await cb!.get('tok_EN-1'), undefined, 'gone once the challenge is done');

  const text = JSON.stringify(logs.lines);
  t.notMatch(text, /PRIVATE KEY/, 'no private key in the log');
  t.ok(logs.lines.some((l) => l.msg === 'certificate reloaded' && l.source === 'acme'), 'the reload is logged (fingerprint and names)');
});

contract('an install moved from SQLite keeps its data_dir pair and ACME account in the store', async (t, { store }) => {
  const dataDir = tempDir(t);
  const old = await issued('mx.sluice.test');
  const acme = await issued('mx.sluice.test');
  fs.mkdirSync(path.join(dataDir, 'tls'));
  fs.writeFileSync(path.join(dataDir, 'tls', 'cert.pem'), old.cert);
  fs.writeFileSync(path.join(dataDir, 'tls', 'key.pem'), old.key);
  fs.mkdirSync(path.join(dataDir, 'acme'));
  fs.writeFileSync(path.join(dataDir, 'acme', 'account-key.pem'), 'the old account key');
  const material = storeTlsMaterial(store.settings, dataDir);
  const { pair, made } = await material.selfSigned(async () => issued('never.test'));
  t.same({ cert: pair.cert, made }, { cert: old.cert, made: false }, 'the self-signed pair of data_dir/tls, not a new one');
  t.equal(await material.acmeAccountKey(async () => 'new'), 'the old account key');
  t.equal(await material.acmePair(), undefined, 'no ACME pair in data_dir: none');
  fs.writeFileSync(path.join(dataDir, 'acme', 'cert.pem'), acme.cert);
  fs.writeFileSync(path.join(dataDir, 'acme', 'key.pem'), acme.key);
  t.same(await material.acmePair(), acme, 'data_dir/acme\'s pair, taken into the store');
  t.same(JSON.parse((await store.settings.get(TLS_SETTINGS.acmePair))!), acme);
});
