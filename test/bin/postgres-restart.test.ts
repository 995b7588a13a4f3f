// Fault test on PostgreSQL (issue 33 item 8): the database server restarted under load. While it is down the MX
// answers 451 and the API 503 (never 500, never a hang); nothing acknowledged is lost; the nodes recover by themselves.
// The cluster is this test process's own (pg-cluster.ts), so stopping it touches no other test file.
import nodemailer from 'nodemailer';
import t from 'tap';
import { restartCluster, stopCluster } from '../helpers/pg-cluster.js';
import { provisionInboundThrough, RCPT_ZONE, sendThrough, startPgNodes, type PgNode } from '../helpers/pg-nodes.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';

/** A request that has not answered within this long counts as a hang (the pool's connect timeout is 10 s). */
const HANG_MS = 20_000;

t.test('PostgreSQL restarted mid-load: 451 and 503 while down, nothing acknowledged lost, the nodes recover alone', async (t) => {
  t.setTimeout(180_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { ...RCPT_ZONE });
  const c = await startPgNodes(t, 2, { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off' });
  // Inbound mail for corp.test is relayed to the same sink (its downstream).
  await provisionInboundThrough(c, c.nodes[0]!, 'corp.test', sink.port);

  // `across`: a request answered while the server stopped or started, or begun in one phase and answered in another.
  type Phase = 'before' | 'down' | 'after' | 'across';
  let phase: Phase = 'before';
  let stop = false;
  const accepted = new Set<string>();
  const seen: Record<Phase, string[]> = { before: [], down: [], after: [], across: [] };
  let changed!: () => void;
  let progress = new Promise<void>((r) => (changed = r));
  const note = (began: Phase, what: string, subject: string | undefined) => {
    seen[began === phase ? began : 'across'].push(what);
    if (subject) accepted.add(subject);
    changed();
    progress = new Promise<void>((r) => (changed = r));
  };
  /** Waits (event-driven: each answer a client gets) until `cond` holds; a node that died fails the wait. */
  const until = async (cond: () => boolean) => {
    while (!cond()) {
      const dead = c.nodes.find((node) => node.child.exitCode !== null || node.child.signalCode !== null);
      if (dead) throw new Error(`a node exited (${dead.child.exitCode ?? dead.child.signalCode}) while waiting in phase ${phase}`);
      // Before the stop and after the restart every request is accepted: anything else will not get better by waiting.
      const refused = phase === 'down' || phase === 'across' ? [] : seen[phase].filter((x) => x !== 'http 202' && x !== 'smtp 250');
      if (refused.length > 0) throw new Error(`${phase}: ${refused.slice(0, 5).join(', ')}`);
      await progress;
    }
  };
  let n = 0;
  const rest = async (node: PgNode) => {
    while (!stop) {
      const at = phase;
      const subject = `rest-${n++}`;
      const res = await sendThrough(node, c.key, { to: `${subject}@rcpt.test`, subject }, AbortSignal.timeout(HANG_MS)).catch((err: Error) => err);
      if (res instanceof Error) note(at, `error ${res.name}`, undefined);
      else {
        await res.arrayBuffer();
        note(at, `http ${res.status}`, res.status === 202 ? subject : undefined);
      }
    }
  };
  const mx = async (node: PgNode) => {
    const [host, port] = [node.info.mx.split(':')[0]!, Number(node.info.mx.split(':')[1])];
    const transport = nodemailer.createTransport({ host, port, secure: false, ignoreTLS: true, name: 'client.sender.test', socketTimeout: HANG_MS, greetingTimeout: HANG_MS });
    t.teardown(() => transport.close());
    while (!stop) {
      const at = phase;
      const subject = `mx-${n++}`;
      const raw = [`From: <a@sender.test>`, `To: <bob@corp.test>`, `Subject: ${subject}`, `Message-ID: <${subject}@sender.test>`, '', 'hello', ''].join('\r\n');
      try {
        const info = await transport.sendMail({ envelope: { from: 'a@sender.test', to: ['bob@corp.test'] }, raw });
        note(at, `smtp ${info.response.slice(0, 3)}`, info.response.startsWith('250') ? subject : undefined);
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode;
        note(at, code === undefined ? `smtp error ${(err as { code?: string }).code}` : `smtp ${code}`, undefined);
      }
    }
  };
  const load = c.nodes.flatMap((node) => [rest(node), mx(node)]);
  const count = (at: Phase, what: string) => seen[at].filter((x) => x === what).length;
  const tally = (at: Phase) => [...new Set(seen[at])].map((k) => `${k}×${count(at, k)}`).join(', ');

  await until(() => count('before', 'http 202') >= 5 && count('before', 'smtp 250') >= 3);
  phase = 'across';
  await stopCluster('fast');
  phase = 'down';
  t.comment(`stopped PostgreSQL after ${tally('before')}`);
  // Every node has answered both kinds of client while the server was down.
  await until(() => count('down', 'http 503') >= 4 && count('down', 'smtp 451') >= 4);
  phase = 'across';
  await restartCluster();
  t.comment(`started PostgreSQL again after ${tally('down')}`);
  phase = 'after';
  // Recovery without restarting a node: both kinds of client are accepted again.
  await until(() => count('after', 'http 202') >= 5 && count('after', 'smtp 250') >= 3);
  stop = true;
  await Promise.all(load);

  t.comment(`before: ${tally('before')}; down: ${tally('down')}; after: ${tally('after')}; across a change: ${tally('across')}`);
  t.same(seen.down.filter((x) => x !== 'http 503' && x !== 'smtp 451'), [], 'while down: 503 and 451 only (no 500, no hang, no 5xx reply)');
  t.same(seen.across.filter((x) => !['http 503', 'http 202', 'smtp 451', 'smtp 250'].includes(x)), [], 'across the stop or the restart: accepted, or 503 and 451');
  t.same([...seen.before, ...seen.after].filter((x) => x !== 'http 202' && x !== 'smtp 250'), [], 'before and after: every request accepted');

  // Everything acknowledged, before, during and after, is delivered.
  const subjects = () => new Set(sink.messages.map((m) => /\r\nSubject: ((?:rest|mx)-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1]));
  while ([...accepted].some((s) => !subjects().has(s))) await sink.waitFor(sink.messages.length + 1);
  t.same([...accepted].filter((s) => !subjects().has(s)), [], `all ${accepted.size} acknowledged messages delivered`);
  for (const node of c.nodes) {
    t.equal(node.child.exitCode, null, 'the node kept running');
    node.child.kill('SIGTERM');
  }
});
