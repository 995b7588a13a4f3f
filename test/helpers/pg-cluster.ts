// Owns the tests' throwaway PostgreSQL cluster: one per test process on a free loopback port, started on first use
// and stopped when the process exits, and a fresh database for each caller (the cluster itself: bench/pg-cluster.ts).
import { postgresBinDir, startPgCluster, type PgCluster } from '../../bench/pg-cluster.js';

/** Whether this machine can run the PostgreSQL tests (Debian's postgresql package installed). */
export function postgresAvailable(): boolean {
  return postgresBinDir() !== undefined;
}

let cluster: Promise<PgCluster> | undefined;
let databases = 0;

// fsync off: a test cluster survives no power cut, and tests run several times faster; kill -9 of a Sluice node
// (not of the server) is unaffected. Benchmarks start their own cluster with the defaults. The cluster's files are a
// copy of one initdb the test processes share (each test file is a process with a cluster of its own).
const start = () => startPgCluster({ durable: false, initdbCache: true });

/** Runs SQL as the cluster's superuser (tests arranging databases; Sluice itself goes through storage/postgres/). */
export async function psql(sql: string, database = 'postgres'): Promise<string> {
  return (await (cluster ??= start())).psql(sql, database);
}

/** A new, empty database on the process's cluster (started on first use): its URL. */
export async function freshDatabase(): Promise<string> {
  const c = await (cluster ??= start());
  return c.createDatabase(`sluice_${process.pid}_${++databases}`);
}

let template: Promise<string> | undefined;

/**
 * A new database with Sluice's schema already applied (what a node finds after the first one migrated it): a copy
 * of one template the process migrates once (CREATE DATABASE … TEMPLATE), so each test stack skips the migrations
 * (about 0.25 s apiece, measured with a probe under load 4.5). Tests of the migrations themselves take freshDatabase.
 */
export async function migratedDatabase(): Promise<string> {
  const c = await (cluster ??= start());
  const name = await (template ??= (async () => {
    const url = await c.createDatabase(`sluice_${process.pid}_template`);
    const { openPostgresStore } = await import('../../storage/postgres/store.js');
    // Closed before any copy: PostgreSQL copies a template only while nobody is connected to it.
    await (await openPostgresStore({ url, poolSize: 1, now: Date.now })).close();
    return `sluice_${process.pid}_template`;
  })());
  const db = `sluice_${process.pid}_${++databases}`;
  // Over a connection of its own, not psql: spawning psql is most of a copy's time (about 0.2 s of 0.34 s).
  const { createPg } = await import('../../storage/postgres/database.js');
  const admin = createPg({ url: `postgres://postgres@127.0.0.1:${c.port}/postgres`, poolSize: 1, applicationName: 'sluice-tests' });
  try {
    await admin.exec(`CREATE DATABASE ${db} TEMPLATE ${name}`);
  } finally {
    await admin.close();
  }
  return `postgres://postgres@127.0.0.1:${c.port}/${db}`;
}

/** The cluster's port (starting it if needed): tests that stop or break the server reach it here. */
export async function clusterPort(): Promise<number> {
  return (await (cluster ??= start())).port;
}

/**
 * Stops the process's server (`fast`: connections are ended, as a restart by an operator; `immediate`: as a crash).
 * Only for a test file of its own: every database of the process goes down with it.
 */
export async function stopCluster(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
  await (await (cluster ??= start())).stopServer(mode);
}

/** Starts the process's server again on the same port and data after stopCluster. */
export async function restartCluster(): Promise<void> {
  await (await (cluster ??= start())).startServer();
}
