#!/usr/bin/env -S node --max-semi-space-size=8
// Owns the process entry point of the `sluice` binary: runs the CLI with the real stdio and exits with its code.
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
  cwd: process.cwd(),
});
process.exitCode = code;
