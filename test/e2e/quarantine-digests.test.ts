// End to end on each backend (issue 37 item 3): mail quarantined for bob and carol at corp.test → the digest job →
// each gets a DKIM-signed digest in their mailbox (the downstream sink) with working links; a link's GET changes
// nothing, its POST releases to that recipient only, once; forged, other-recipient, virus and expired links are
// refused; release-and-safelist lets the sender's next message through; the setting from the console and the CLI.
// Item 4: the digest's view link signs a recipient in, once, to their own held mail and lists, nobody else's.
import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { GTUBE } from '../../filters/spam-rules.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { DIGEST_VIEW_TTL_MS, mintDigestLink, mintDigestViewLink } from '../../mta/inbound/digest-links.js';
import { dkimDnsRecord, generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';
import { onBackends } from '../helpers/backends.js';
import { cliIn } from '../helpers/cli-in.js';
import { consoleClient } from '../helpers/console-world.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack } from '../helpers/stack.js';

const DAY = 86_400_000;
const pair = await generateDkimKeyPair(1024);
const record = dkimDnsRecord('ops.test', 'dg', pair.publicKeyBase64);

onBackends('digests: a signed digest per recipient, links that confirm, act once for their recipient, and refuse the rest', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const dns = await startDnsServer(t, { 'spammer.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] }, [record.name]: { TXT: [record.value] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_INBOUND_DIGEST_FROM: 'quarantine@ops.test' } });
  const operator = (await stack.accounts.findByHandle('default'))!;
  await stack.store.dkimKeys.insert({ accountId: operator.id, domain: 'ops.test', selector: 'dg', keyLength: 1024, privateKey: pair.privateKeyPem, publicKey: pair.publicKeyBase64, now: stack.clock.now() });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const key = k.value.key;
  const made = await stack.api('POST', '/inbound/v1/domains', {
    key,
    body: { domain: 'corp.test', subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' }, downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
  });
  t.match(made, { status: 201, body: { settings: { quarantineDigest: 'daily', quarantineDigestAdmins: false } } }, 'daily by default');

  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.spammer.test', tls: { rejectUnauthorized: false } });
  t.teardown(() => transport.close());
  const send = (to: string[], subject: string) =>
    transport.sendMail({ envelope: { from: 'x@spammer.test', to }, raw: ['From: X <x@spammer.test>', `To: ${to.join(', ')}`, `Subject: ${subject}`, `Message-ID: <${subject}@spammer.test>`, '', GTUBE, ''].join('\r\n') });
  await send(['bob@corp.test', 'carol@corp.test'], 'Cheap watches');
  const held = await stack.api('GET', '/inbound/v1/quarantine', { key });
  t.equal(held.body.total, 1, 'quarantined once for both');
  const id = held.body.messages[0].id as number;

  // The job, a minute later: one digest each, in their mailbox, from the operator's address, signed with its key;
  // not again today.
  stack.clock.advance(60_000);
  t.equal(await stack.digests.runOnce(), 2);
  t.equal(await stack.digests.runOnce(), 0, 'not due again within the day');
  while ((await stack.worker.runOnce()) > 0);
  t.equal(sink.messages.length, 2);
  const digestOf = async (who: string) => {
    const m = sink.messages.find((x) => x.rcptTo.includes(who))!;
    return { m, mail: await simpleParser(m.raw) };
  };
  const bob = await digestOf('bob@corp.test');
  t.equal(bob.m.mailFrom, '', 'the null sender: a digest never bounces');
  t.match(bob.mail.subject, 'Quarantine digest: 1 message held for you');
  t.match(bob.mail.text, /From: +X <x@spammer\.test>[^]*Subject: +Cheap watches[^]*Held for: spam score \d+/);
  const resolver = mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] }));
  const auth = await authenticate(bob.m.raw, { ip: '127.0.0.1', helo: 'mx.sluice.test', sender: '', mta: 'downstream.test', resolver });
  t.match(auth.dkim?.results, [{ signingDomain: 'ops.test', status: { result: 'pass' } }], 'DKIM-signed with the operator\'s key');
  const links = (text: string) => ({
    release: /Release: +(\S+)/.exec(text)?.[1] as string,
    safelist: /Release and safelist: +(\S+)/.exec(text)?.[1] as string,
    delete: /Delete: +(\S+)/.exec(text)?.[1] as string,
  });
  const bobLinks = links(bob.mail.text!);
  const carolLinks = links((await digestOf('carol@corp.test')).mail.text!);
  t.match(bob.mail.html, /<a href="http:\/\/127\.0\.0\.1:\d+\/console\/digest\?token=[^"]+">Release<\/a>/);

  /** A link as a browser opens it: the GET's page, and `press()`, the POST its button sends (again when pressed again). */
  const open = async (link: string) => {
    const page = await fetch(link, { redirect: 'manual' });
    const html = await page.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
    const press = async () => {
      const done = await fetch(new URL('/console/digest', link), {
        method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
        body: new URLSearchParams({ _csrf: csrf, token: new URL(link).searchParams.get('token')! }).toString(),
      });
      return { status: done.status, html: await done.text() };
    };
    return { status: page.status, html, press };
  };
  const follow = async (link: string) => {
    const { status, html } = await open(link);
    return { status, html };
  };

  // The GET shows the message and asks; nothing happens (a mail scanner following it releases nothing).
  const asked = await follow(bobLinks.release);
  t.equal(asked.status, 200);
  t.match(asked.html, /Release this message\?[^]*Cheap watches[^]*<button[^>]*>Release<\/button>/);
  while ((await stack.worker.runOnce()) > 0);
  t.equal(sink.messages.length, 2, 'nothing relayed by the GET');

  // The POST relays it to bob alone, once; a second click changes nothing.
  const bobRelease = await open(bobLinks.release);
  t.match(await bobRelease.press(), { status: 200, html: /Released: the message is on its way to bob@corp\.test/ });
  while ((await stack.worker.runOnce()) > 0);
  t.equal(sink.messages.length, 3);
  t.same(sink.messages[2]!.rcptTo, ['bob@corp.test']);
  t.match(sink.messages[2]!.raw.toString(), /Subject: Cheap watches/);
  t.match(await bobRelease.press(), { status: 200, html: /Nothing to do/ }, 'the button pressed again');
  t.match(await follow(bobLinks.release), { status: 200, html: /Nothing to do/ }, 'the link opened again');
  t.match(await follow(bobLinks.delete), { status: 200, html: /Nothing to do/ }, 'nor bob\'s delete link now');
  while ((await stack.worker.runOnce()) > 0);
  t.equal(sink.messages.length, 3, 'relayed once');
  t.match((await stack.api('GET', `/inbound/v1/quarantine/${id}`, { key })).body, { status: 'held', rcpt_to: ['carol@corp.test'] }, 'still held for carol');

  // Forged: a changed MAC; another recipient's: bob's link naming carol (the MAC no longer holds); another message.
  const token = new URL(carolLinks.release).searchParams.get('token')!;
  const parts = token.split('.');
  const forge = (p: string[]) => carolLinks.release.replace(token, p.join('.'));
  const flipped = [...parts.slice(0, 5), (parts[5]![0] === 'A' ? 'B' : 'A') + parts[5]!.slice(1)];
  t.match(await follow(forge(flipped)), { status: 403, html: /not valid/ }, 'forged MAC');
  t.match(await follow(forge([...parts.slice(0, 4), Buffer.from('bob@corp.test').toString('base64url'), parts[5]!])), { status: 403 }, 'for another recipient');
  t.match(await follow(forge([String(id + 1), ...parts.slice(1)])), { status: 403 }, 'for another message');

  // Release and safelist: carol gets it, and x@spammer.test's next message to her comes through, not held.
  t.match(await (await open(carolLinks.safelist)).press(), { status: 200, html: /Released[^]*Mail from x@spammer\.test is safelisted for you/ });
  await send(['carol@corp.test'], 'Second offer');
  while ((await stack.worker.runOnce()) > 0);
  const toCarol = sink.messages.slice(3).map((m) => `${m.rcptTo.join(',')} ${/Subject: (.*)/.exec(m.raw.toString())?.[1]}`).sort();
  t.same(toCarol, ['carol@corp.test Cheap watches', 'carol@corp.test Second offer']);
  t.equal((await stack.api('GET', '/inbound/v1/quarantine?status=held', { key })).body.total, 0, 'nothing held');
  t.same((await stack.api('GET', '/inbound/v1/users/carol@corp.test/lists/safelist', { key })).body, [{ item: 'x@spammer.test', item_type: 'email_address', action: 'safelist' }]);

  // A virus: listed with a delete link only; a release link for it (signed by the server) is refused.
  const virusId = await stack.store.quarantine.insert({
    accountId: acct.id, domainId: (await stack.store.inboundDomains.findDomain('corp.test'))!.id, domain: 'corp.test',
    queueId: 'V1', mailFrom: 'v@spammer.test', rcptTo: ['bob@corp.test'], clientIp: '192.0.2.9', helo: 'spammer.test', fromHeader: 'v@spammer.test',
    subject: 'Invoice', messageId: 'v@spammer.test', score: 0, reason: 'virus-quarantine',
    verdicts: [{ step: 'virus', verdict: 'infected', reason: 'clamd-found', signature: 'Eicar-Signature' }],
    body: Buffer.from('Subject: Invoice\r\n\r\nX5O!P%@AP\r\n'), now: stack.clock.now(), expiresAt: stack.clock.now() + 30 * DAY,
  });
  stack.clock.advance(DAY);
  t.equal(await stack.digests.runOnce(), 1, 'bob: what came since his last digest');
  while ((await stack.worker.runOnce()) > 0);
  const second = await simpleParser(sink.messages.at(-1)!.raw);
  t.match(second.text, /Subject: +Invoice[^]*Held for: virus: Eicar-Signature/);
  t.notMatch(second.text, /Cheap watches|Release:/, 'only the new message, and no release link for a virus');
  const virusLink = mintDigestLink(stack.services.digestLinks.secret, { quarantineId: virusId, accountId: acct.id, action: 'release', admin: false, address: 'bob@corp.test', expiresAt: stack.clock.now() + DAY });
  t.match(await follow(`${stack.baseUrl}/console/digest?token=${virusLink}`), { status: 403, html: /virus/ });
  t.match((await stack.api('GET', `/inbound/v1/quarantine/${virusId}`, { key })).body, { status: 'held' });

  // The setting in the console's Inbound domains view and the CLI; off: no digest, however much is held.
  const c = consoleClient(stack.baseUrl);
  await c.signIn(key);
  t.match((await c.get('/console/domains')).text, /<option selected>daily<\/option>/);
  t.match(await c.post('/console/domains/digest', { domain: 'corp.test', interval: 'weekly', admins: 'true' }), { status: 302 });
  t.match((await stack.api('GET', '/inbound/v1/domains?domains=corp.test', { key })).body.domains[0].settings, { abusePolicy: 'quarantine', quarantineDigest: 'weekly', quarantineDigestAdmins: true });
  // With admins on, a domain admin gets the whole domain's digest (each message naming its recipients) besides bob's.
  t.equal((await stack.api('PUT', '/inbound/v1/users?email_address=admin@corp.test&admin=true', { key })).status, 201);
  await send(['bob@corp.test'], 'Admin sees this');
  stack.clock.advance(7 * DAY);
  const before = sink.messages.length;
  t.equal(await stack.digests.runOnce(), 2, 'bob and the admin');
  while ((await stack.worker.runOnce()) > 0);
  const adminDigest = sink.messages.slice(before).find((m) => m.rcptTo.includes('admin@corp.test'));
  t.ok(adminDigest, 'the admin got one');
  const adminMail = await simpleParser(adminDigest!.raw);
  t.match(adminMail.subject, /^Quarantine digest for corp\.test: \d+ messages? held$/);
  t.match(adminMail.text, /Subject: +Admin sees this[^]*To: +bob@corp\.test/);
  const bad = await stack.api('PUT', '/inbound/v1/domains/corp.test/settings', { key, body: { quarantineDigest: 'monthly' } });
  t.same(bad.body.errors, ['quarantineDigest: must be one of hourly, daily, weekly, off']);
  t.same(await cliIn(stack.env, 'inbound-domains', 'digest', '--account', 'acme', '--domain', 'corp.test', '--interval', 'off', '--admins', 'no'), { code: 0, out: 'corp.test: quarantine digest off\n', err: '' });
  await send(['bob@corp.test'], 'Third offer');
  stack.clock.advance(7 * DAY);
  t.equal(await stack.digests.runOnce(), 0, 'off: none');

  // Expired with the message's retention (inbound.quarantine_days, 30).
  stack.clock.advance(30 * DAY);
  t.match(await follow(links(second.text!).delete), { status: 403, html: /expired/ });
});

onBackends('a digest\'s view link: bob signs in once to his own held mail and lists, releases his part only, sees nobody else\'s', async (t, backend) => {
  const sink = await startSink(t);
  const dns = await startDnsServer(t, {});
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address } });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const key = k.value.key;
  const downstream = [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }];
  t.equal((await stack.api('POST', '/inbound/v1/domains', { key, body: { domain: 'corp.test', subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' }, downstreamAddresses: downstream } })).status, 201);
  t.equal((await stack.api('POST', '/inbound/v1/users/carol@corp.test/lists/blocklist', { key, body: { item: 'carol-blocked.example' } })).status, 201);
  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.spammer.test' });
  t.teardown(() => transport.close());
  const send = (to: string[], subject: string) =>
    transport.sendMail({ envelope: { from: 'x@spammer.test', to }, raw: [`To: ${to.join(', ')}`, `Subject: ${subject}`, `Message-ID: <${subject.replace(/\W/g, '')}@spammer.test>`, '', GTUBE, ''].join('\r\n') });
  await send(['bob@corp.test', 'carol@corp.test'], 'For both');
  await send(['carol@corp.test'], 'Carol only');
  const ids = Object.fromEntries((await stack.api('GET', '/inbound/v1/quarantine', { key })).body.messages.map((m: { subject: string; id: number }) => [m.subject, m.id]));
  const virus = await stack.store.quarantine.insert({
    accountId: acct.id, domainId: (await stack.store.inboundDomains.findDomain('corp.test'))!.id, domain: 'corp.test', queueId: 'V2', mailFrom: 'v@spammer.test',
    rcptTo: ['bob@corp.test'], clientIp: '192.0.2.9', helo: 'spammer.test', fromHeader: null, subject: 'Infected', messageId: null, score: 0, reason: 'virus-quarantine',
    verdicts: [{ step: 'virus', verdict: 'infected', signature: 'Eicar-Signature' }], body: Buffer.from('Subject: Infected\r\n\r\nX5O!P%@AP\r\n'), now: stack.clock.now(), expiresAt: stack.clock.now() + 30 * DAY,
  });

  // The digest carries a view link signed for bob (the console's link page), next to the one-click links.
  stack.clock.advance(60_000);
  t.equal(await stack.digests.runOnce(), 2);
  while ((await stack.worker.runOnce()) > 0);
  const digest = await simpleParser(sink.messages.find((m) => m.rcptTo.includes('bob@corp.test'))!.raw);
  const view = /See all your held mail, and your safelist and blocklist: +(\S+)/.exec(digest.text ?? '')![1]!;
  t.match(digest.html, /<a href="[^"]+\/console\/link\?token=[^"]+">See all your held mail<\/a>/);
  const path = new URL(view).pathname + new URL(view).search;
  const token = new URL(view).searchParams.get('token')!;

  // The GET asks (a scanner following it signs nobody in); the button signs bob in to his own mail.
  const bob = consoleClient(stack.baseUrl);
  t.match((await bob.get(path)).text, /Sign in as <strong>bob@corp\.test<\/strong>/);
  t.match(await bob.post('/console/link', { token }), { status: 302, location: '/console/quarantine' });
  const list = await bob.get('/console/quarantine');
  for (const shown of [/Quarantine of bob@corp\.test/, /For both/, /Infected/]) t.match(list.text, shown);
  t.notMatch(list.text, /Carol only|carol@/, 'nothing of carol\'s, not even her address on the shared message');
  const nav = /<nav>([^]*?)<\/nav>/.exec(list.text)![1]!;
  t.same([...nav.matchAll(/href="([^"?]+)/g)].map((m) => m[1]), ['/console/quarantine', '/console/lists'], 'his quarantine and lists only');

  // Another recipient's entry, filter or list, and every other view: 404, as the domain admin's scope answers.
  for (const p of [`/console/quarantine/${ids['Carol only']}`, '/console/quarantine?recipient=carol@corp.test', '/console/lists?email=carol@corp.test', '/console/domains', '/console/recipients', '/console/inbound-log', '/console/queue']) {
    const r = await bob.get(p);
    t.equal(r.status, 404, p);
    t.notMatch(r.text, /Carol only|carol-blocked/, `${p}: nothing of carol's`);
  }
  await bob.get('/console/quarantine');
  t.equal((await bob.post(`/console/quarantine/${ids['Carol only']}/release`, {})).status, 404, 'carol\'s message is not released');
  t.equal((await bob.post('/console/lists/add', { email: 'carol@corp.test', list: 'safelist', item: 'x@spammer.test' })).status, 404, 'nor her list edited');

  // His own lists: added through the view, stored as his recipient-level safelist.
  t.match(await bob.post('/console/lists/add', { list: 'safelist', item: 'friend@ok.test' }), { status: 302 });
  t.match((await bob.get('/console/lists')).text, /Safelist &amp; blocklist of bob@corp\.test[^]*friend@ok\.test/);
  t.same((await stack.api('GET', '/inbound/v1/users/bob@corp.test/lists/safelist', { key })).body, [{ item: 'friend@ok.test', item_type: 'email_address', action: 'safelist' }]);

  // Release relays to bob alone (carol's part stays held); a virus is never released from here, but he may delete it.
  t.match(await bob.post(`/console/quarantine/${ids['For both']}/release`, {}), { status: 302, location: '/console/quarantine?account=acme&done=released-mine' });
  while ((await stack.worker.runOnce()) > 0);
  const relayed = sink.messages.filter((m) => /Subject: For both/.test(m.raw.toString()));
  t.same(relayed.map((m) => m.rcptTo), [['bob@corp.test']]);
  t.match((await stack.api('GET', `/inbound/v1/quarantine/${ids['For both']}`, { key })).body, { status: 'held', rcpt_to: ['carol@corp.test'] });
  const infected = await bob.get(`/console/quarantine/${virus}`);
  t.notMatch(infected.text, />Release</, 'no release button for a virus');
  t.equal((await bob.post(`/console/quarantine/${virus}/release`, {})).status, 403);
  t.match((await stack.api('GET', `/inbound/v1/quarantine/${virus}`, { key })).body, { status: 'held' });
  t.equal((await bob.post(`/console/quarantine/${virus}/delete`, {})).status, 302);
  t.equal((await stack.api('GET', `/inbound/v1/quarantine/${virus}`, { key })).status, 404, 'deleted (he was its only recipient)');

  // Replayed (another browser) and expired links are refused.
  const other = consoleClient(stack.baseUrl);
  t.match((await other.get(path)).text, /already used/);
  await other.get('/console/login');
  t.match(await other.post('/console/link', { token }), { status: 403, text: /already used/ });
  const late = mintDigestViewLink(stack.services.digestLinks.secret, { accountId: acct.id, address: 'bob@corp.test', now: stack.clock.now() });
  stack.clock.advance(DIGEST_VIEW_TTL_MS);
  t.match(await other.get(`/console/link?token=${late}`), { status: 403, text: /expired/ });
  await other.get('/console/login');
  t.match(await other.post('/console/link', { token: late }), { status: 403, text: /expired/ });
  t.equal((await other.get('/console/quarantine')).headers.get('location'), '/console/login', 'neither signed in');
});
