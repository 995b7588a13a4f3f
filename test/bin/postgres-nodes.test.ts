// Multi-node test on one PostgreSQL database (issue 33): three `sluice serve` nodes, each with a data_dir of its own,
// accept mail through their own APIs and deliver each message exactly once; a webhook signing key, an API key and
// an account made through one node are the same on the others; housekeeping leads on one node only; every node
// presents the one self-signed certificate kept in the database.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { freshDatabase, psql } from '../helpers/pg-cluster.js';
import { firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { smtpTalk } from '../helpers/smtp-talk.js';
import { tempDir } from '../helpers/stack.js';

const PER_NODE = 30;

t.test('three nodes on one database: mail accepted on every node is delivered once; state made on one is seen on all', async (t) => {
  t.setTimeout(240_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  const url = await freshDatabase();
  const env = {
    SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off',
    SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: url, SLUICE_STORAGE_POSTGRES_POOL_SIZE: '4',
  };
  // The first node makes the schema and the first key (in its own data_dir); the others start on that database.
  const dirs = [tempDir(t), tempDir(t), tempDir(t)];
  const first = serveBinary(t, dirs[0]!, env);
  const infos = [await first.listening];
  const key = firstKey(dirs[0]!);
  const rest = dirs.slice(1).map((d) => serveBinary(t, d, env));
  infos.push(...(await Promise.all(rest.map((n) => n.listening))));
  const nodes = [first, ...rest];

  const send = (info: { http: string }, i: number) =>
    fetch(`http://${info.http}/tx/v1/send-async`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        personalizations: [{ to: [{ email: `u${i % 5}@rcpt.test` }] }],
        from: { email: 'app@sender.test' },
        subject: `node-${i}`,
        content: [{ type: 'text/plain', value: 'one of many' }],
      }),
    });
  const statuses = await Promise.all(infos.flatMap((info, n) => Array.from({ length: PER_NODE }, (_, k) => send(info, n * PER_NODE + k).then((r) => r.status))));
  t.same([...new Set(statuses)], [202], 'every node accepted with the key the first node made');
  const total = PER_NODE * infos.length;
  while (sink.messages.length < total) await sink.waitFor(sink.messages.length + 1);
  const subjects = sink.messages.map((m) => /\r\nSubject: (node-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1]);
  t.equal(new Set(subjects).size, total, `${total} messages delivered, each once`);
  t.equal(subjects.length, total, 'no message delivered twice');
  const byNode = nodes.map((n) => n.lines.filter((l) => l.msg === 'delivery attempt').length);
  t.comment(`delivery attempts logged per node: ${byNode.join(', ')}`);

  // The webhook signing key: one per cluster, whichever node answers.
  const keys = await Promise.all(infos.map(async (info) => (await (await fetch(`http://${info.http}/notifications/v1/webhook/public-key`, { headers: { 'X-Api-Key': key } })).json()) as { key: string }));
  t.equal(new Set(keys.map((k) => k.key)).size, 1, 'every node answers the same webhook public key');
  // A sub-account made through node C is read through node A.
  const made = await fetch(`http://${infos[2]!.http}/tx/v1/sub-account`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ company_name: 'Beta', handle: 'beta' }),
  });
  t.equal(made.status, 201, 'created on node C');
  const list = (await (await fetch(`http://${infos[0]!.http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': key } })).json()) as { handle: string }[];
  t.ok(list.some((s) => s.handle === 'beta'), 'listed on node A');
  // Housekeeping (retention, the body sweep, DKIM retirement) is led by one node.
  const leads = await psql("SELECT count(*) FROM job_leads WHERE job = 'housekeeping'", new URL(url).pathname.slice(1));
  t.equal(leads, '1', 'one housekeeping lead');
  const leaders = nodes.filter((n) => n.lines.some((l) => l.job === 'housekeeping' && l.leading === true));
  t.equal(leaders.length, 1, 'one node runs housekeeping');
  // One self-signed certificate for the cluster, kept in the database: STARTTLS on every node presents it, and no
  // node's data_dir holds a pair (mta/smtp/tls-material.ts).
  const fingerprints = await Promise.all(
    infos.map(async (info) => {
      const smtp = await smtpTalk(t, Number(String(info.mx).split(':').pop()));
      await smtp.send('EHLO client.test');
      return (await smtp.starttls()).fingerprint256;
    }),
  );
  t.equal(new Set(fingerprints).size, 1, `every node presents the same certificate (${fingerprints[0]})`);
  t.same(dirs.filter((d) => fs.existsSync(path.join(d, 'tls'))), [], 'no data_dir holds a TLS pair');
  for (const n of nodes) n.child.kill('SIGTERM');
});
