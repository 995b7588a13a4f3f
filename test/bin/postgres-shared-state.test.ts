// Multi-node test on one PostgreSQL database (issue 33 item 8): what one node makes another uses — a DKIM key made
// through node A signs mail sent through node B, a console session made on A works on B and ends on C, and the
// remediation daily limit counts delistings made through every node.
import { authenticate } from 'mailauth';
import t from 'tap';
import { GTUBE } from '../../filters/spam-rules.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { consoleClient } from '../helpers/console-world.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { RCPT_ZONE, sendThrough, startPgNodes } from '../helpers/pg-nodes.js';
import { startSink } from '../helpers/smtp-sink.js';

t.test('three nodes on one database share DKIM keys, console sessions and the delisting limit', async (t) => {
  t.setTimeout(120_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { ...RCPT_ZONE });
  // One CONFIRMED message blocks its sender; two delistings a day (the default) are allowed.
  const { nodes, key } = await startPgNodes(t, 3, {
    SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off',
    SLUICE_ABUSE_BLOCK_CONFIRMED: '1', SLUICE_ABUSE_DELIST_PER_DAY: '2',
  });
  const [a, b, c] = nodes as [(typeof nodes)[0], (typeof nodes)[0], (typeof nodes)[0]];
  const api = (node: typeof a, method: string, path: string, body?: unknown) =>
    fetch(`http://${node.info.http}${path}`, {
      method,
      headers: { 'X-Api-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  t.test('a DKIM key made through node A signs what node B sends', async (t) => {
    const made = await api(a, 'POST', '/tx/v1/domains/sender.test/dkim-keys', { selector: 'multi' });
    t.equal(made.status, 201, 'created on node A');
    const rec = ((await made.json()) as { dkim_dns_records: { name: string; value: string }[] }).dkim_dns_records[0]!;
    dns.zones[rec.name] = { TXT: [rec.value] };
    t.equal((await sendThrough(b, key, { to: 'dkim@rcpt.test', subject: 'signed on B' })).status, 202, 'sent through node B');
    const [msg] = (await sink.waitFor(1)).filter((m) => m.rcptTo.includes('dkim@rcpt.test'));
    const resolver = mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 2000, tries: 2 }));
    const auth = await authenticate(msg!.raw, { ip: '127.0.0.1', helo: 'mx.sluice.test', sender: 'app@sender.test', mta: 'sink.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true });
    const results = auth.dkim?.results ?? [];
    t.ok(
      results.some((r) => r.status.result === 'pass' && r.signingDomain === 'sender.test' && r.selector === 'multi'),
      `d=sender.test s=multi verifies against the published record: ${JSON.stringify(results.map((r) => [r.signingDomain, r.selector, r.status.result]))}`,
    );
  });

  t.test('a console session signed in through node A (with a form from node C) works on node B and ends on C', async (t) => {
    // A balancer that sends each request to whichever node `target` names: the cookie jar is the browser's.
    let target = c;
    const browser = consoleClient('http://balancer', (input, init) => fetch(String(input).replace('http://balancer', `http://${target.info.http}`), init));
    t.equal((await browser.get('/console/login')).status, 200, 'sign-in form from node C');
    target = a;
    const signedIn = await browser.post('/console/login', { secret: key });
    t.equal(signedIn.status, 302, 'node A accepts the form node C minted (the console secret is shared)');
    const home = signedIn.location!;
    t.match(home, /^\/console\//);
    target = b;
    const page = await browser.get(home);
    t.equal(page.status, 200, `node B serves ${home} to the session made on A`);
    t.match(page.text, /Sign out|logout/i, 'as a signed-in page');
    target = c;
    t.equal((await browser.post('/console/logout', {})).status, 302, 'signed out on node C with the CSRF token node B rendered');
    target = b;
    const after = await browser.get(home);
    t.equal(after.status, 302, 'node B no longer knows the session');
    t.equal(after.headers.get('location'), '/console/login');
  });

  t.test('the delisting limit holds across nodes', async (t) => {
    const remediate = (node: typeof a) => api(node, 'POST', '/outbound/v1/remediation?sender=app@sender.test');
    const spam = (node: typeof a) => sendThrough(node, key, { to: 'spam@rcpt.test', subject: 'spam', text: GTUBE });
    // Block through one node, delist through another, twice; the third delisting (through the third node) is refused.
    const rounds: [typeof a, typeof a, number][] = [[a, b, 200], [b, c, 200], [c, a, 429]];
    for (const [blocker, lifter, want] of rounds) {
      t.equal((await spam(blocker)).status, 403, 'GTUBE is refused, a strike');
      t.equal((await sendThrough(lifter, key, { to: 'x@rcpt.test', subject: 'probe' })).status, 403, 'the block is seen on another node');
      const res = await remediate(lifter);
      t.equal(res.status, want, `delisting through another node: ${want}`);
      await res.arrayBuffer();
    }
  });
});
