// Checks the inbound policy step (mta/inbound/policy.ts): what a spam verdict does per domain, and the one reply;
// and what the RCPT-time checks (rcpt-checks.ts) leave out for a recipient created with filter=false.
import pino from 'pino';
import t from 'tap';
import type { SpamStepVerdict } from '../../../filters/inbound-verdicts.js';
import { decideAccountPolicies, decidePolicy, refusalAtRcpt, refusalWithoutRecipients, type DomainRecipients } from '../../../mta/inbound/policy.js';
import { createRcptChecks } from '../../../mta/inbound/rcpt-checks.js';
import { REPLY } from '../../../mta/smtp/replies.js';
import type { AbusePolicy, ServedDomainRow } from '../../../storage/ports/inbound-domains.js';

function served(id: number, domain: string, abusePolicy: AbusePolicy | null, header?: [string, string]): ServedDomainRow {
  return {
    id, account_id: 1, domain, subscription_id: 1, api_key_id: null, abuse_policy: abusePolicy, abuse_policy_override: null,
    spam_header_name: header?.[0] ?? null, spam_header_value: header?.[1] ?? null, digest_interval: 'daily', digest_admins: false, created_at: 0, updated_at: 0,
    subscription_handle: 'sub', via_alias: null,
  };
}
const spam = (verdict: SpamStepVerdict['verdict'], reason = 'spam-score'): SpamStepVerdict =>
  ({ step: 'spam', verdict, reason, score: 9, threshold: 5, rules: [] });
const group = (s: ServedDomainRow, rcpt: string[], safe: string[] = []): DomainRecipients => ({ served: s, rcpt, safe });

t.test('not spam: every recipient relayed in one copy; safelisted ones recorded as such', async (t) => {
  const a = served(1, 'a.test', 'block');
  const b = served(2, 'b.test', null);
  const d = decidePolicy([group(a, ['x@a.test', 'y@a.test'], ['y@a.test']), group(b, ['z@b.test'])], spam('ham', 'below-threshold'));
  t.same(d.verdicts, [
    { step: 'policy', domain: 'a.test', rcpt: ['y@a.test'], verdict: 'relay', reason: 'safelisted' },
    { step: 'policy', domain: 'a.test', rcpt: ['x@a.test'], verdict: 'relay', reason: 'not-spam' },
    { step: 'policy', domain: 'b.test', rcpt: ['z@b.test'], verdict: 'relay', reason: 'not-spam' },
  ]);
  t.same(d.relays, [{ rcpt: ['y@a.test', 'x@a.test', 'z@b.test'], domainIds: [1, 2], strip: 'x-spam-flag' }]);
  t.same(d.quarantines, []);
  t.equal(d.refusal, undefined);
});

t.test("spam: each domain's abuse policy; flag adds the domain's header; block alone refuses as spam", async (t) => {
  const flag = served(1, 'flag.test', 'flag', ['X-Junk', 'yes']);
  const quarantine = served(2, 'q.test', 'quarantine');
  const block = served(3, 'block.test', 'block');
  const d = decidePolicy([group(flag, ['f@flag.test']), group(quarantine, ['q@q.test']), group(block, ['b@block.test'])], spam('spam'));
  t.same(d.verdicts.map((v) => [v.domain, v.verdict, v.reason]), [
    ['flag.test', 'flag', 'abuse-policy-flag'],
    ['q.test', 'quarantine', 'abuse-policy-quarantine'],
    ['block.test', 'block', 'abuse-policy-block'],
  ]);
  t.same(d.relays, [{ rcpt: ['f@flag.test'], domainIds: [1], strip: 'x-junk', flag: 'X-Junk: yes' }]);
  t.same(d.quarantines, [{ served: quarantine, rcpt: ['q@q.test'], strip: 'x-spam-flag' }]);
  t.equal(d.refusal, undefined, 'someone keeps the message: 250');

  const blocked = decidePolicy([group(block, ['b@block.test'])], spam('spam'));
  t.same(blocked.refusal, { code: 550, status: '5.7.1', message: 'Message refused as spam' });
  t.same(blocked.verdicts, [{ step: 'policy', domain: 'block.test', rcpt: ['b@block.test'], verdict: 'block', reason: 'abuse-policy-block' }]);
  t.same(decidePolicy([group(served(4, 'd.test', null), ['d@d.test'])], spam('spam')).relays[0]?.flag, 'X-Spam-Flag: YES', 'the default policy flags');
});

t.test('spam for an unfiltered recipient (filter=false) is relayed as it came, even under block; a virus is not', async (t) => {
  const block = served(1, 'block.test', 'block');
  const groups = [{ ...group(block, ['u@block.test', 'f@block.test']), unfiltered: ['u@block.test'] }];
  const d = decidePolicy(groups, spam('spam'));
  t.same(d.verdicts.map((v) => [v.rcpt, v.verdict, v.reason]), [[['u@block.test'], 'relay', 'recipient-unfiltered'], [['f@block.test'], 'block', 'abuse-policy-block']]);
  t.same(d.relays, [{ rcpt: ['u@block.test'], domainIds: [1], strip: 'x-spam-flag' }], 'unflagged');
  t.equal(d.refusal, undefined, 'kept for the unfiltered one: 250');
  t.same(decidePolicy(groups, spam('ham', 'below-threshold')).verdicts.map((v) => v.reason), ['not-spam'], 'said only of spam');
  const virus = decidePolicy(groups, spam('spam'), { step: 'virus', verdict: 'infected', reason: 'clamd-found', signature: 'Eicar' });
  t.same([virus.relays, virus.verdicts.map((v) => v.reason)], [[], ['virus-refused']]);
});

t.test('at RCPT an unfiltered recipient is neither refused by the DNS lists nor greylisted; its blocklist still holds', async (t) => {
  const corp = served(1, 'corp.test', 'block');
  const asked: string[][] = [];
  const blocked = new Set<string>();
  const checks = createRcptChecks({
    domains: { findServedDomain: async () => corp },
    lists: { matchLists: async (q) => ({ account: [], domain: [], recipient: blocked.has(q.recipient ?? '') ? [{ id: 1, account_id: 1, level: 'recipient', scope: q.recipient!, domain_id: 1, item: 'x@spam.test', item_type: 'email_address', action: 'blocklist', created_at: 0 }] : [] }) },
    recipients: { unfiltered: async (_a, addresses) => (asked.push([...addresses]), addresses.filter((a) => a.startsWith('u@'))) },
    dnsLists: { enabled: true, client: async (ip) => ({ hits: ip === '192.0.2.1' ? [{ zone: 'zen.test', weight: 5, answer: '127.0.0.2', item: ip }] : [], errors: [] }), domains: async () => ({ hits: [], errors: [] }) },
    dnsblThreshold: 3,
    greylist: { applies: () => true, check: async () => REPLY.spam, rspamdAsked: async () => undefined },
    logger: pino({ level: 'silent' }),
  });
  const q = (rcpt: string, clientIp = '192.0.2.1') => checks.check({ mailFrom: 'x@spam.test', clientIp, rcpt });
  t.match(await q('f@corp.test'), { code: 554 }, 'a filtered recipient: refused by the DNS lists');
  t.equal(await q('U@Corp.test'), undefined, 'an unfiltered one: accepted');
  t.same(asked, [['f@corp.test'], ['u@corp.test']], 'asked as stored: lower case, on the provisioned domain');
  t.equal(await q('f@corp.test', '192.0.2.9'), REPLY.spam, 'an unlisted client: greylisting decides for a filtered one');
  t.equal(await q('u@corp.test', '192.0.2.9'), undefined, 'not for an unfiltered one');
  blocked.add('u@corp.test');
  t.match(await q('u@corp.test'), { code: 550, status: '5.7.1' }, 'its own blocklist still refuses');
});

t.test('no spam decision (rspamd down, tempfail) → 451 4.7.1 and nothing decided', async (t) => {
  const d = decidePolicy([group(served(1, 'a.test', 'flag'), ['x@a.test'])], spam('skipped', 'filter-error:rspamd'));
  t.same(d, { verdicts: [], relays: [], quarantines: [], refusal: { code: 451, status: '4.7.1', message: 'Spam scanner unavailable, try again later' } });
  t.same(decidePolicy([group(served(1, 'a.test', 'block'), ['x@a.test'])], spam('skipped', 'all-safelisted')).refusal, undefined);
  // rspamd asked for a retry: the sender is told to try later, not that a scanner is down.
  for (const reason of ['rspamd-soft-reject', 'rspamd-greylist']) {
    t.same(decidePolicy([group(served(1, 'a.test', 'flag'), ['x@a.test'])], spam('skipped', reason)).refusal, { code: 451, status: '4.7.1', message: 'Try again later' }, reason);
  }
});

t.test('refusals before the policy: at RCPT by the lists, at DATA without recipients', async (t) => {
  const blocked = { code: 550, status: '5.7.1', message: 'Message refused: the sender is blocklisted by the recipient' };
  t.same(refusalAtRcpt({ action: 'block', level: 'recipient', item: 'a@b.test', itemType: 'email_address', reason: 'blocklist-sender' }), blocked);
  t.equal(refusalAtRcpt({ action: 'none', reason: 'no-list-match' }), undefined);
  t.same(refusalWithoutRecipients([{ step: 'lists', rcpt: 'x@a.test', verdict: 'block', reason: 'blocklist-ip' }]), blocked);
  t.same(refusalWithoutRecipients([{ step: 'recipient', rcpt: 'x@gone.test', verdict: 'drop', reason: 'domain-not-served' }]), {
    code: 550, status: '5.7.1', message: 'Relay access denied',
  });
});

t.test('recipients spanning accounts: each account its own verdict and decision; one reply to DATA', async (t) => {
  const of = (accountId: number, s: ServedDomainRow): ServedDomainRow => ({ ...s, account_id: accountId });
  const victim = of(1, served(1, 'victim.test', 'block'));
  const attacker = of(2, served(2, 'attacker.test', 'flag'));
  const both = (v: SpamStepVerdict, a: SpamStepVerdict) => decideAccountPolicies([
    { accountId: 1, groups: [group(victim, ['bob@victim.test'])], spam: v },
    { accountId: 2, groups: [group(attacker, ['eve@attacker.test'])], spam: a },
  ]);

  const mixed = both(spam('spam'), spam('ham', 'below-threshold'));
  t.equal(mixed.refusal, undefined, 'one account blocks, the other keeps it: 250');
  t.same(mixed.decisions.map((d) => [d.accountId, d.verdicts.map((v) => [v.rcpt, v.verdict])]), [
    [1, [[['bob@victim.test'], 'block']]],
    [2, [[['eve@attacker.test'], 'relay']]],
  ], 'the blocked recipient is recorded as such (dropped, no bounce)');
  t.same(mixed.decisions.map((d) => d.relays.map((r) => r.rcpt)), [[], [['eve@attacker.test']]], 'relays are never shared across accounts');

  t.equal(both(spam('spam'), spam('spam')).refusal, undefined, 'spam for both: the attacker flags it, so it is kept');
  const attackerBlocks = decideAccountPolicies([
    { accountId: 1, groups: [group(victim, ['bob@victim.test'])], spam: spam('spam') },
    { accountId: 2, groups: [group(of(2, served(3, 'b.test', 'block')), ['x@b.test'])], spam: spam('spam') },
  ]);
  t.same(attackerBlocks.refusal, { code: 550, status: '5.7.1', message: 'Message refused as spam' }, 'every account refuses: 550 as spam');

  const undecided = both(spam('skipped', 'filter-error:rspamd'), spam('skipped', 'all-safelisted'));
  t.same(undecided.refusal, { code: 451, status: '4.7.1', message: 'Spam scanner unavailable, try again later' },
    'a temporary refusal for one account defers the whole transaction (nothing committed)');

  const one = decideAccountPolicies([{ accountId: 1, groups: [group(victim, ['bob@victim.test'])], spam: spam('spam') }]);
  t.same(one, { decisions: [{ accountId: 1, ...decidePolicy([group(victim, ['bob@victim.test'])], spam('spam')) }], refusal: decidePolicy([group(victim, ['bob@victim.test'])], spam('spam')).refusal }, 'one account: its decision as it was');
});
