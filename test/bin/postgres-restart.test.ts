// Fault test on PostgreSQL (issue 33 item 8): the database server restarted under load. While it is down the MX
// answers 451, the API 503 and submission 454 to AUTH and 451 to a message (never 535, never a 5xx, never a hang);
// nothing acknowledged is lost; the nodes recover by themselves.
// The cluster is this test process's own (pg-cluster.ts), so stopping it touches no other test file.
import nodemailer from 'nodemailer';
import t from 'tap';
import { restartCluster, stopCluster } from '../helpers/pg-cluster.js';
import { provisionInboundThrough, RCPT_ZONE, sendThrough, startPgNodes, type PgNode } from '../helpers/pg-nodes.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';

/** A request that has not answered within this long counts as a hang (the pool's connect timeout is 10 s). */
const HANG_MS = 20_000;
/** What an accepted request gets, per kind of client. */
const ACCEPTED = ['http 202', 'smtp 250', 'submission 250'];
/**
 * What a request may get while the database is down: 503 from the API, 451 from the MX (RFC 5321 §4.2.5: local error
 * in processing), 454 to submission's AUTH (RFC 4954 §6: temporary authentication failure) and 451 to its MAIL or DATA.
 */
const DOWN = ['http 503', 'smtp 451', 'submission AUTH 454', 'submission 451'];

t.test('PostgreSQL restarted mid-load: 451, 454 and 503 while down, nothing acknowledged lost, the nodes recover alone', async (t) => {
  t.setTimeout(180_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { ...RCPT_ZONE });
  // Submission AUTH in plaintext from loopback: the test's client needs no TLS, the AUTH path is the same.
  const c = await startPgNodes(t, 2, {
    SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off',
    SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true',
  });
  const password = (JSON.parse(await c.cli(['smtp-passwords', 'create', '--account', 'default', '--json'])) as { smtp_password: string }).smtp_password;
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
      const refused = phase === 'down' || phase === 'across' ? [] : seen[phase].filter((x) => !ACCEPTED.includes(x));
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
  /**
   * Submission with AUTH: `pooled` keeps one authenticated connection (its messages meet the outage at MAIL or DATA,
   * `submission 4xx`), otherwise each message is a new connection that logs in first (`submission AUTH 4xx`).
   */
  const submission = async (node: PgNode, pooled: boolean) => {
    const [host, port] = [node.info.submission.split(':')[0]!, Number(node.info.submission.split(':')[1])];
    const transport = nodemailer.createTransport({
      host, port, secure: false, ignoreTLS: true, name: 'client.sender.test', socketTimeout: HANG_MS, greetingTimeout: HANG_MS,
      auth: { user: 'default', pass: password }, ...(pooled ? { pool: true, maxConnections: 1, maxMessages: Infinity } : {}),
    });
    t.teardown(() => transport.close());
    while (!stop) {
      const at = phase;
      const subject = `sub-${n++}`;
      try {
        const info = await transport.sendMail({ from: 'app@sender.test', to: `${subject}@rcpt.test`, subject, text: 'submitted' });
        note(at, `submission ${info.response.slice(0, 3)}`, info.response.startsWith('250') ? subject : undefined);
      } catch (err) {
        const e = err as { responseCode?: number; code?: string; command?: string };
        const stage = e.code === 'EAUTH' || e.command?.startsWith('AUTH') ? 'submission AUTH' : 'submission';
        note(at, e.responseCode === undefined ? `${stage} error ${e.code}` : `${stage} ${e.responseCode}`, undefined);
      }
    }
  };
  const load = c.nodes.flatMap((node) => [rest(node), mx(node), submission(node, false), submission(node, true)]);
  const count = (at: Phase, what: string) => seen[at].filter((x) => x === what).length;
  const tally = (at: Phase) => [...new Set(seen[at])].map((k) => `${k}×${count(at, k)}`).join(', ');

  await until(() => count('before', 'http 202') >= 5 && count('before', 'smtp 250') >= 3 && count('before', 'submission 250') >= 4);
  phase = 'across';
  await stopCluster('fast');
  phase = 'down';
  t.comment(`stopped PostgreSQL after ${tally('before')}`);
  // Every node has answered both kinds of client while the server was down.
  await until(() => count('down', 'http 503') >= 4 && count('down', 'smtp 451') >= 4 && count('down', 'submission AUTH 454') >= 2 && count('down', 'submission 451') >= 2);
  phase = 'across';
  await restartCluster();
  t.comment(`started PostgreSQL again after ${tally('down')}`);
  phase = 'after';
  // Recovery without restarting a node: both kinds of client are accepted again.
  await until(() => count('after', 'http 202') >= 5 && count('after', 'smtp 250') >= 3 && count('after', 'submission 250') >= 4);
  stop = true;
  await Promise.all(load);

  t.comment(`before: ${tally('before')}; down: ${tally('down')}; after: ${tally('after')}; across a change: ${tally('across')}`);
  t.same(seen.down.filter((x) => !DOWN.includes(x)), [], 'while down: 503, 451 and 454 only (no 500, no 535, no hang, no 5xx reply)');
  t.same(seen.across.filter((x) => !DOWN.includes(x) && !ACCEPTED.includes(x)), [], 'across the stop or the restart: accepted, or 503, 451 and 454');
  t.same([...seen.before, ...seen.after].filter((x) => !ACCEPTED.includes(x)), [], 'before and after: every request accepted');

  // Everything acknowledged, before, during and after, is delivered.
  const subjects = () => new Set(sink.messages.map((m) => /\r\nSubject: ((?:rest|mx|sub)-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1]));
  while ([...accepted].some((s) => !subjects().has(s))) await sink.waitFor(sink.messages.length + 1);
  t.same([...accepted].filter((s) => !subjects().has(s)), [], `all ${accepted.size} acknowledged messages delivered`);
  for (const node of c.nodes) {
    t.equal(node.child.exitCode, null, 'the node kept running');
    node.child.kill('SIGTERM');
  }
});
