// Checks contrib/Containerfile for real with podman: the image builds (npm ci, tsc, prune) on a Node 26 slim base,
// runs as the unprivileged node user with its state in the /var/lib/sluice volume, answers /readyz through a published
// port, passes its own HEALTHCHECK, and stops cleanly on SIGTERM. Serial: a build takes minutes of both cores.
// No registry is reachable here, so the base is a local stand-in for node:26-slim (contrib/container-base.sh makes
// it; SLUICE_TEST_NODE_IMAGE names another). Skipped, saying why, without podman or without that image.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import t from 'tap';

const BASE = process.env.SLUICE_TEST_NODE_IMAGE ?? 'localhost/sluice-node:26-slim';

function podman(args: string[], timeoutMs = 60_000): { status: number; out: string } {
  const r = spawnSync('podman', args, { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.error ? -1 : (r.status ?? -1), out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

const skip =
  podman(['--version']).status !== 0
    ? 'podman is not installed (apt-get install podman)'
    : podman(['image', 'exists', BASE]).status !== 0
      ? `no base image ${BASE}: make it with contrib/container-base.sh (no registry is reachable here)`
      : false;

t.test('contrib/Containerfile: builds, runs as node with a data volume, /readyz and the healthcheck pass', { skip, timeout: 900_000 }, async (t) => {
  const tag = `localhost/sluice-test:${process.pid}`;
  const name = `sluice-test-${process.pid}`;
  t.teardown(() => {
    podman(['rm', '-f', '-v', name]);
    podman(['rmi', '-f', tag]);
  });
  // Behind a TLS-inspecting proxy npm needs its CA: the bundle Node is told of here goes into the build, not the image.
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  const caArgs = ca && fs.existsSync(ca) ? ['-v', `${ca}:/run/ca.pem:ro`, '--build-arg', 'NODE_EXTRA_CA_CERTS=/run/ca.pem'] : [];
  const build = podman(
    ['build', '--format', 'docker', '-f', 'contrib/Containerfile', '--ignorefile', 'contrib/containerignore', '--build-arg', `NODE_IMAGE=${BASE}`, ...caArgs, '-t', tag, '.'],
    840_000,
  );
  t.equal(build.status, 0, 'the image builds');
  if (build.status !== 0) return void t.comment(build.out.slice(-3000));

  type Health = { Test: string[] } | undefined;
  const config = JSON.parse(podman(['image', 'inspect', tag]).out)[0] as {
    Config: { User: string; Volumes?: Record<string, unknown>; ExposedPorts?: Record<string, unknown>; Healthcheck?: Health };
    Healthcheck?: Health;
  };
  // podman reports the healthcheck beside Config, Docker inside it.
  const health = config.Healthcheck ?? config.Config.Healthcheck;
  t.equal(config.Config.User, 'node', 'runs as node, not root');
  t.same(Object.keys(config.Config.Volumes ?? {}), ['/var/lib/sluice'], 'one data volume');
  t.match(health?.Test.join(' '), /\/readyz/, 'its healthcheck asks /readyz');
  t.ok(config.Config.ExposedPorts?.['8080/tcp'] && config.Config.ExposedPorts['2525/tcp'], 'HTTP and MX ports exposed');

  t.equal(podman(['run', '-d', '--name', name, '-p', '127.0.0.1::8080', tag]).status, 0, 'it starts');
  const port = Number(podman(['port', name, '8080']).out.trim().split(':').pop());
  t.ok(port > 0, `published on 127.0.0.1:${port}`);
  // Started when /readyz answers: polled, as an orchestrator's probe would, for at most a minute.
  let ready: { status: number; body: string } | undefined;
  for (let i = 0; i < 120 && ready?.status !== 200; i++) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => undefined,
    );
    if (ready?.status !== 200) await new Promise((r) => setTimeout(r, 500));
  }
  t.same(ready, { status: 200, body: '{"ready":true}' }, '/readyz through the published port');
  t.equal(podman(['healthcheck', 'run', name]).status, 0, 'the image\'s own HEALTHCHECK passes');
  t.match(podman(['exec', name, 'id', '-u']).out.trim(), /^1000$/, 'the server process is not root');
  const files = podman(['exec', name, 'ls', '/var/lib/sluice']).out;
  t.match(files, /sluice\.db/, 'the database is in the volume');
  t.match(files, /initial-api-key/, 'so is the first API key');
  const docs = await fetch(`http://127.0.0.1:${port}/docs/assets/swagger-ui-bundle.js`);
  t.equal(docs.status, 200, 'the production dependencies include the API reference page\'s renderer');
  await docs.arrayBuffer();

  t.equal(podman(['stop', '-t', '30', name], 60_000).status, 0);
  t.equal(podman(['inspect', name, '--format', '{{.State.ExitCode}}']).out.trim(), '0', 'SIGTERM: a clean exit');
});
