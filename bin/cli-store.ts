// Owns `sluice store copy --to postgres://…`: the checks of the command line and of data_dir, and the report.
import { copyStore, type CopyReport } from '../storage/copy.js';
import { UsageError, withoutPassword, type CliIo } from './cli-common.js';
import { runningServes } from './pid-registry.js';

/** `--to` as a PostgreSQL URL, or a usage error (exit 2). */
function targetUrl(to: string | undefined): URL {
  if (!to) throw new UsageError('usage: sluice store copy --to postgres://USER@HOST:PORT/DATABASE');
  let url: URL;
  try {
    url = new URL(to);
  } catch {
    throw new UsageError(`--to ${JSON.stringify(to)} is not a URL: give postgres://USER@HOST:PORT/DATABASE`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new UsageError(`--to must be a postgres:// URL, not ${url.protocol}//…`);
  }
  if (url.pathname.length <= 1) throw new UsageError('--to names no database: give postgres://USER@HOST:PORT/DATABASE');
  return url;
}

/** The report: one line per table (rows, bytes), the bodies, what was not copied and why, then "verified". */
export function formatReport(r: CopyReport, dataDir: string, target: string): string {
  const width = Math.max(...r.tables.map((t) => t.table.length), 'bodies (data_dir/spool)'.length);
  const line = (name: string, rows: number | string, bytes: number | string) => `  ${name.padEnd(width)}  ${String(rows).padStart(9)}  ${String(bytes).padStart(12)}\n`;
  let out = `copied data_dir ${dataDir} (SQLite, schema ${r.sourceVersion}) to ${target} (schema ${r.targetVersion}):\n`;
  out += line('table', 'rows', 'bytes');
  for (const t of r.tables) out += line(t.table, t.rows, t.bytes);
  out += line('bodies (data_dir/spool)', r.bodies.rows, r.bodies.bytes);
  out += 'not copied:\n' + r.notCopied.map((n) => `  ${n.name}: ${n.why}\n`).join('');
  const rows = r.tables.reduce((n, t) => n + t.rows, 0);
  out += `verified: ${r.tables.length} tables, ${rows} rows and ${r.bodies.rows} spooled bodies read back from PostgreSQL with equal counts and digests\n`;
  out += 'next: start sluice serve with storage.backend = postgres and storage.postgres_url on each node\n';
  return out;
}

/** `sluice store copy --to URL`: refused while a sluice serve runs on data_dir; exit 0 once verified and committed. */
export async function storeCommand(sub: string | undefined, rest: string[], to: string | undefined, dataDir: () => string, io: CliIo): Promise<number> {
  if (sub !== 'copy' || rest.length > 0) throw new UsageError('usage: sluice store copy --to postgres://USER@HOST:PORT/DATABASE');
  const url = targetUrl(to);
  const dir = dataDir();
  const running = runningServes(dir);
  if (running.length > 0) {
    throw new Error(`sluice serve (pid ${running.map((p) => p.pid).join(', ')}) is running on data_dir ${dir}: stop it first; nothing was copied`);
  }
  const report = await copyStore(dir, to as string);
  io.stdout(formatReport(report, dir, withoutPassword(url.href)));
  return 0;
}
