#!/usr/bin/env -S node --max-semi-space-size=8 --expose-gc
// Owns the process entry point of the `sluice` binary: checks the node it runs on, then runs the CLI with the real
// stdio and exits with its code.
import { nodeTooOld } from './cli-node-version.js';

// Before the CLI is imported: on an old node its dependencies fail to load with a stack trace naming none of this.
const tooOld = nodeTooOld(process.version, process.execPath);
if (tooOld !== undefined) {
  process.stderr.write(tooOld);
  process.exit(1);
}
const { runCli } = await import('./cli.js');
const code = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  cwd: process.cwd(),
});
process.exitCode = code;
// A serving child of `sluice serve` (server.processes > 1) has an IPC channel to its primary that would keep it
// alive after a start-up error, and node:cluster exits 0 when it is closed: exit with the code, which the primary reports.
if (process.connected) process.exit(code);
