// Owns loading mailauth's entry point (authenticate, sealMessage) without its BIMI module, which sluice never runs.
import { createRequire, Module } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/**
 * mailauth 7's entry requires lib/bimi at load time, and BIMI brings undici, joi, fast-xml-parser and @postalsys/vmc
 * with @peculiar/x509: ~220 modules, ~10 MB of RSS in every serving process (issue 32: measured with `require` of
 * `mailauth` against its lib/ modules, 85.6 → 75.4 MB). sluice calls authenticate with `disableBimi: true`
 * (filters/inbound-auth.ts), so those modules are never used: their slots in the module cache hold stand-ins that
 * throw if ever called, before the entry is required. The version is pinned (package.json), so the layout is known;
 * test/filters/mailauth-entry.test.ts fails if an upgrade moves it.
 */
function standIn(file: string, names: string[]): void {
  const filename = path.join(path.dirname(require.resolve('mailauth')), file);
  if (require.cache[filename]) return;
  const m = new Module(filename);
  m.filename = filename;
  m.loaded = true;
  m.exports = Object.fromEntries(
    names.map((n) => [
      n,
      () => {
        throw new Error(`mailauth ${n}: BIMI is not loaded in sluice (authenticate runs with disableBimi)`);
      },
    ]),
  );
  require.cache[filename] = m;
}
standIn('bimi/index.js', ['bimi', 'validateVMC']);
standIn('bimi/validate-svg.js', ['validateSvg']);

const mailauth = require('mailauth') as typeof import('mailauth');

/** mailauth's authenticate (SPF, DKIM, DMARC, ARC); BIMI must stay disabled. */
export const authenticate = mailauth.authenticate;
/** mailauth's sealMessage (ARC, RFC 8617). */
export const sealMessage = mailauth.sealMessage;
