// Checks the list repository against a real SQLite file: IP key encoding, CIDR ranges, matching per level.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { createInboundDomainStore } from '../../storage/sqlite/inbound-domains.js';
import { createInboundListStore } from '../../storage/sqlite/inbound-lists.js';
import { ipKey, parseIpItem, type ListScope } from '../../storage/ports/inbound-lists.js';

t.test('ipKey maps IPv4 into ::ffff:0:0/96 and parses every IPv6 spelling', async (t) => {
  t.equal(ipKey('192.0.2.1')?.toString('hex'), '00000000000000000000ffffc0000201');
  t.same(ipKey('::ffff:192.0.2.1'), ipKey('192.0.2.1'));
  t.same(ipKey('::FFFF:c000:201'), ipKey('192.0.2.1'));
  t.equal(ipKey('2001:db8::1')?.toString('hex'), '20010db8000000000000000000000001');
  t.same(ipKey('[2001:db8::1]'), ipKey('2001:0db8:0:0:0:0:0:1'));
  t.equal(ipKey('::')?.toString('hex'), '0'.repeat(32));
  t.equal(ipKey('1::')?.toString('hex'), '0001' + '0'.repeat(28));
  for (const bad of ['', '1.2.3', '256.0.0.1', 'fe80::1%eth0', '1:2:3:4:5:6:7:8:9', 'example.com']) t.equal(ipKey(bad), undefined, bad);
});

t.test('parseIpItem: canonical text (RFC 5952), host bits cleared, inclusive range', async (t) => {
  const r = parseIpItem('192.0.2.77/26');
  t.equal(r?.item, '192.0.2.64/26');
  t.equal(r?.start.toString('hex'), '00000000000000000000ffffc0000240');
  t.equal(r?.end.toString('hex'), '00000000000000000000ffffc000027f');
  t.equal(parseIpItem('2001:0DB8:0000:0000:0001:0000:0000:0001')?.item, '2001:db8::1:0:0:1');
  t.equal(parseIpItem('2001:db8:0:1:1:1:1:1')?.item, '2001:db8:0:1:1:1:1:1');
  t.equal(parseIpItem('::ffff:192.0.2.0/120')?.item, '192.0.2.0/24');
  t.equal(parseIpItem('192.0.2.9/32')?.item, '192.0.2.9');
  t.equal(parseIpItem('2001:db8::9/128')?.item, '2001:db8::9');
  t.equal(parseIpItem('0.0.0.0/0')?.item, '0.0.0.0/0');
  for (const bad of ['192.0.2.0/33', '192.0.2.0/', '192.0.2.0/-1', '2001:db8::/129', '[2001:db8::]/32', 'x/24']) {
    t.equal(parseIpItem(bad), undefined, bad);
  }
});

t.test('matchLists over SQLite: ranges, parent domains, addresses, levels and accounts kept apart', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-lists-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const accounts = createAccountStore(db);
  const domains = createInboundDomainStore(db);
  const lists = createInboundListStore(db);
  const a = accounts.createParentWithKey({ handle: 'storeco', companyName: null, now: 1 });
  const b = accounts.createParentWithKey({ handle: 'storebco', companyName: null, now: 1 });
  if (!a.ok || !b.ok) throw new Error('accounts');
  const sub = domains.findSubscription(a.account.id, 'default');
  if (!sub) throw new Error('default subscription missing');
  const p = domains.provision({
    accountId: a.account.id, callerKeyId: 0, bindKeyId: null, domain: 'corp.test', subscription: sub,
    sections: {}, overwrite: false, now: 1,
  });
  if (!p.ok) throw new Error('provision');
  const acct: ListScope = { level: 'account', accountId: a.account.id };
  const dom: ListScope = { level: 'domain', accountId: a.account.id, domainId: p.domainId, domain: 'corp.test' };
  const rcpt: ListScope = { level: 'recipient', accountId: a.account.id, domainId: p.domainId, recipient: 'bob@corp.test' };
  lists.addEntry(acct, { item: '192.0.2.64/26', itemType: 'ip_address', action: 'blocklist' }, 1);
  lists.addEntry(acct, { item: '2001:db8:1::/48', itemType: 'ip_address', action: 'blocklist' }, 1);
  lists.addEntry(dom, { item: 'example.net', itemType: 'domain', action: 'blocklist' }, 1);
  lists.addEntry(rcpt, { item: 'friend@mail.example.net', itemType: 'email_address', action: 'safelist' }, 1);
  lists.addEntry({ level: 'account', accountId: b.account.id }, { item: '0.0.0.0/0', itemType: 'ip_address', action: 'blocklist' }, 1);

  const ip = (clientIp: string) => lists.matchLists({ accountId: a.account.id, domain: 'corp.test', clientIp }).account.length;
  t.equal(ip('192.0.2.63'), 0, 'just below the range');
  t.equal(ip('192.0.2.64'), 1, 'first address');
  t.equal(ip('::ffff:192.0.2.127'), 1, 'last address, mapped form');
  t.equal(ip('192.0.2.128'), 0, 'just above');
  t.equal(ip('2001:db8:1:ffff::1'), 1);
  t.equal(ip('2001:db8:2::1'), 0);
  t.equal(ip('not-an-ip'), 0);

  const m = lists.matchLists({
    accountId: a.account.id, domain: 'corp.test', recipient: 'Bob@corp.test', senderAddress: 'Friend@Mail.Example.NET',
  });
  t.same(m.domain.map((e) => e.item), ['example.net'], 'a domain entry covers its subdomains');
  t.same(m.recipient.map((e) => [e.item, e.action]), [['friend@mail.example.net', 'safelist']]);
  t.same(lists.matchLists({ accountId: a.account.id, domain: 'corp.test', recipient: 'alice@corp.test', senderAddress: 'friend@mail.example.net' }).recipient, []);
  t.same(lists.matchLists({ accountId: a.account.id, domain: 'other.test', senderDomain: 'example.net.' }).domain, [], 'other domain');
  t.same(lists.matchLists({ accountId: a.account.id, domain: 'corp.test', senderDomain: 'notexample.net' }).domain, [], 'suffix must be a label boundary');

  // Deleting the domain takes its domain- and recipient-level entries with it.
  domains.deleteDomain(p.domainId);
  t.same(lists.listEntries(dom, 'blocklist'), []);
  t.same(lists.listEntries(rcpt, 'safelist'), []);
  t.equal(lists.listEntries(acct, 'blocklist').length, 2);
});
