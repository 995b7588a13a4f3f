// Tests of reading outbound.tls_ca_file at start: each certificate apart; a missing or certificate-less file names the key.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { readCaFile } from '../../bin/wiring-tls-out.js';
import { ConfigError } from '../../config/keys.js';
import { tempDir } from '../helpers/stack.js';
import { selfSignedFor } from '../helpers/test-certs.js';

t.test('outbound.tls_ca_file: two certificates read apart; missing and empty files are configuration errors', async (t) => {
  const dir = tempDir(t);
  const [a, b] = await Promise.all([selfSignedFor(['a.test']), selfSignedFor(['b.test'])]);
  const file = path.join(dir, 'ca.pem');
  // Joined without a line break between them, as a careless concatenation leaves them.
  fs.writeFileSync(file, a.cert.trimEnd() + b.cert);
  t.same(readCaFile(file).map((c) => c.trim()), [a.cert.trim(), b.cert.trim()]);
  const missing = path.join(dir, 'none.pem');
  t.throws(() => readCaFile(missing), new ConfigError('outbound.tls_ca_file', `${missing}: ENOENT`));
  fs.writeFileSync(path.join(dir, 'empty.pem'), 'not a certificate\n');
  t.throws(() => readCaFile(path.join(dir, 'empty.pem')), { key: 'outbound.tls_ca_file', message: /no PEM certificate/ });
});
