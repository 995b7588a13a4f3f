// Checks the pure list precedence decision and the abuse-policy override rule.
import t from 'tap';
import { decideListVerdict, effectiveAbusePolicy } from '../../filters/inbound-lists.js';
import type { ListAction, ListEntryRow, ListItemType, ListLevel, ListMatches } from '../../storage/ports/inbound-lists.js';

let nextId = 1;
function entry(level: ListLevel, action: ListAction, itemType: ListItemType, item: string): ListEntryRow {
  return { id: nextId++, account_id: 1, level, scope: '', domain_id: null, item, item_type: itemType, action, created_at: 0 };
}
function matches(...entries: ListEntryRow[]): ListMatches {
  return {
    account: entries.filter((e) => e.level === 'account'),
    domain: entries.filter((e) => e.level === 'domain'),
    recipient: entries.filter((e) => e.level === 'recipient'),
  };
}

t.test('no match → none', async (t) => {
  t.same(decideListVerdict(matches()), { action: 'none', reason: 'no-list-match' });
});

t.test('reason codes name the list and the kind of item', async (t) => {
  const cases: [ListAction, ListItemType, string][] = [
    ['blocklist', 'email_address', 'blocklist-sender'],
    ['blocklist', 'domain', 'blocklist-domain'],
    ['blocklist', 'ip_address', 'blocklist-ip'],
    ['safelist', 'email_address', 'safelist-sender'],
    ['safelist', 'domain', 'safelist-domain'],
    ['safelist', 'ip_address', 'safelist-ip'],
  ];
  for (const [action, type, reason] of cases) {
    const v = decideListVerdict(matches(entry('account', action, type, 'x')));
    t.same(v, { action: action === 'blocklist' ? 'block' : 'safelist', level: 'account', item: 'x', itemType: type, reason });
  }
});

t.test('precedence recipient > domain > account: the most specific level with a match decides alone', async (t) => {
  const acctBlock = entry('account', 'blocklist', 'domain', 'spam.example');
  const domSafe = entry('domain', 'safelist', 'email_address', 'news@spam.example');
  const rcptBlock = entry('recipient', 'blocklist', 'ip_address', '192.0.2.0/24');
  t.match(decideListVerdict(matches(acctBlock)), { action: 'block', level: 'account' });
  t.match(decideListVerdict(matches(acctBlock, domSafe)), { action: 'safelist', level: 'domain', reason: 'safelist-sender' });
  t.match(decideListVerdict(matches(acctBlock, domSafe, rcptBlock)), { action: 'block', level: 'recipient', reason: 'blocklist-ip' });
  const rcptSafe = entry('recipient', 'safelist', 'domain', 'spam.example');
  const domBlock = entry('domain', 'blocklist', 'domain', 'spam.example');
  t.match(decideListVerdict(matches(domBlock, rcptSafe)), { action: 'safelist', level: 'recipient' });
});

t.test('abusePolicyOverride puts the domain level above the recipient level (account stays last)', async (t) => {
  const domBlock = entry('domain', 'blocklist', 'domain', 'spam.example');
  const rcptSafe = entry('recipient', 'safelist', 'email_address', 'a@spam.example');
  const acctSafe = entry('account', 'safelist', 'domain', 'spam.example');
  t.match(decideListVerdict(matches(domBlock, rcptSafe), { abusePolicyOverride: true }), { action: 'block', level: 'domain' });
  t.match(decideListVerdict(matches(domBlock, rcptSafe), { abusePolicyOverride: false }), { action: 'safelist', level: 'recipient' });
  t.match(decideListVerdict(matches(rcptSafe, acctSafe), { abusePolicyOverride: true }), { action: 'safelist', level: 'recipient' });
  t.match(decideListVerdict(matches(acctSafe), { abusePolicyOverride: true }), { action: 'safelist', level: 'account' });
});

t.test('within one level a blocklist match beats a safelist match; the most specific item is named', async (t) => {
  const safeSender = entry('domain', 'safelist', 'email_address', 'a@spam.example');
  const blockIp = entry('domain', 'blocklist', 'ip_address', '192.0.2.1');
  const blockDomain = entry('domain', 'blocklist', 'domain', 'spam.example');
  t.same(decideListVerdict(matches(safeSender, blockIp)), {
    action: 'block', level: 'domain', item: '192.0.2.1', itemType: 'ip_address', reason: 'blocklist-ip',
  });
  t.match(decideListVerdict(matches(blockIp, blockDomain, safeSender)), { item: 'spam.example', reason: 'blocklist-domain' });
});

t.test('effectiveAbusePolicy: override → the domain\'s; else the recipient\'s, then the domain\'s, then the fallback', async (t) => {
  t.equal(effectiveAbusePolicy({ domain: { abusePolicy: 'block', abusePolicyOverride: true }, recipient: { abusePolicy: 'flag' }, fallback: 'flag' }), 'block');
  t.equal(effectiveAbusePolicy({ domain: { abusePolicy: 'block', abusePolicyOverride: false }, recipient: { abusePolicy: 'quarantine' }, fallback: 'flag' }), 'quarantine');
  t.equal(effectiveAbusePolicy({ domain: { abusePolicy: 'block', abusePolicyOverride: null }, recipient: { abusePolicy: null }, fallback: 'flag' }), 'block');
  t.equal(effectiveAbusePolicy({ domain: { abusePolicy: null, abusePolicyOverride: null }, fallback: 'quarantine' }), 'quarantine');
  t.equal(effectiveAbusePolicy({ domain: { abusePolicy: null, abusePolicyOverride: true }, recipient: { abusePolicy: 'block' }, fallback: 'flag' }), 'flag');
});
