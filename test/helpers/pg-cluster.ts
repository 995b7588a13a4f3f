// Owns the tests' throwaway PostgreSQL cluster: one per test process on a free loopback port, started on first use
// and stopped when the process exits, and a fresh database for each caller.
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './daemons.js';

const run = promisify(execFile);

/** Where Debian keeps the server's programs (initdb and pg_ctl are not on root's PATH everywhere). */
function binDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return undefined;
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(base, versions[0], 'bin');
}

/** Whether this machine can run the PostgreSQL tests (Debian's postgresql package installed). */
export function postgresAvailable(): boolean {
  return binDir() !== undefined;
}

interface Cluster {
  port: number;
  dir: string;
  /** pg_ctl's `-o` options (the port, socket dir and settings), kept so that the server can be started again. */
  opts: string;
}

let cluster: Promise<Cluster> | undefined;
let databases = 0;

/** initdb refuses root: as root the cluster belongs to the postgres user, as anyone else to oneself. */
function asOwner(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

async function start(): Promise<Cluster> {
  const bin = binDir();
  if (!bin) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
    fs.chownSync(dir, uid, gid);
  }
  const data = path.join(dir, 'data');
  const [initdb, initArgs] = asOwner(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
  await run(initdb, initArgs);
  // The port is free when chosen; another process could take it before the server binds, so retry on that.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    // fsync off: a test cluster survives no power cut, and tests run several times faster; kill -9 of a Sluice node
    // (not of the server) is unaffected. Benchmarks start their own cluster with the defaults.
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
    const [ctl, ctlArgs] = asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start']);
    try {
      await run(ctl, ctlArgs);
    } catch (err) {
      if (attempt < 3) continue;
      throw new Error(`PostgreSQL did not start: ${String(err)}\n${fs.readFileSync(path.join(dir, "log"), "utf8")}`, { cause: err });
    }
    process.on('exit', () => {
      const [stop, stopArgs] = asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
      spawnSync(stop, stopArgs, { stdio: 'ignore' });
      fs.rmSync(dir, { recursive: true, force: true });
    });
    return { port, dir, opts };
  }
}

/** Runs pg_ctl with `args` on the process's cluster, as its owner. */
async function pgCtl(c: Cluster, args: string[]): Promise<void> {
  const [ctl, ctlArgs] = asOwner(path.join(binDir()!, 'pg_ctl'), ['-D', path.join(c.dir, 'data'), ...args]);
  await run(ctl, ctlArgs);
}

/**
 * Stops the process's server (`fast`: connections are ended, as a restart by an operator; `immediate`: as a crash).
 * Only for a test file of its own: every database of the process goes down with it.
 */
export async function stopCluster(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
  await pgCtl(await (cluster ??= start()), ['-m', mode, '-w', '-t', '30', 'stop']);
}

/** Starts the process's server again on the same port and data after stopCluster. */
export async function restartCluster(): Promise<void> {
  const c = await (cluster ??= start());
  await pgCtl(c, ['-o', c.opts, '-l', path.join(c.dir, 'log'), '-w', '-t', '30', 'start']);
}

/** Runs SQL as the cluster's superuser (tests arranging databases; Sluice itself goes through storage/postgres/). */
export async function psql(sql: string, database = 'postgres'): Promise<string> {
  const c = await (cluster ??= start());
  const { stdout } = await run('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(c.port), '-U', 'postgres', '-d', database, '-c', sql]);
  return stdout.trim();
}

/** A new, empty database on the process's cluster (started on first use): its URL. */
export async function freshDatabase(): Promise<string> {
  const c = await (cluster ??= start());
  const name = `sluice_${process.pid}_${++databases}`;
  await psql(`CREATE DATABASE ${name}`);
  return `postgres://postgres@127.0.0.1:${c.port}/${name}`;
}

/** The cluster's port (starting it if needed): tests that stop or break the server reach it here. */
export async function clusterPort(): Promise<number> {
  return (await (cluster ??= start())).port;
}
