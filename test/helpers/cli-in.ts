// Owns running the CLI in the test's own process (`runCli` with a chosen environment) and naming a test database.
import { runCli } from '../../bin/cli.js';

/** Runs `sluice ARGV` in this process on `env` (cwd: its data_dir); its exit code, stdout and stderr. */
export async function cliIn(env: Record<string, string>, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { stdout: (s) => (out += s), stderr: (s) => (err += s), env, cwd: env.SLUICE_DATA_DIR ?? '/' });
  return { code, out, err };
}

/** The database a postgres:// URL names (psql() takes it). */
export const dbName = (url: string) => new URL(url).pathname.slice(1);
