// Tests of the return path's alignment (issue 35) over a real resolver and a local DNS server: answered from memory,
// warmed on first sight, refreshed once a minute, kept while DNS fails; and the MX's reading of an aligned address.
import t, { type Test } from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { canonicalReturnPath } from '../../../mta/delivery/return-path.js';
import { createReturnPathAlignment, decideAlignment, fromDomainOf, REFRESH_MS } from '../../../mta/delivery/return-path-alignment.js';
import { startDnsServer } from '../../helpers/dns-server.js';

const RP = 'rp.sluice.test';

/** `prefix` null: outbound.return_path_prefix unset. */
async function setup(t: Test, prefix: string | null = 'psrp') {
  const dns = await startDnsServer(t, {
    'psrp.aligned.test': { CNAME: `${RP}.` },
    'psrp.elsewhere.test': { CNAME: 'rp.other.test' },
    [RP]: { A: ['127.0.0.1'] },
    'rp.other.test': { A: ['127.0.0.2'] },
  });
  let now = 1_000_000;
  let rp: string | undefined = RP;
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 });
  const alignment = createReturnPathAlignment({ resolver, returnPathDomain: () => rp, prefix: () => prefix ?? undefined, now: () => now });
  const asked = () => dns.queries.filter((q) => q.endsWith(' CNAME')).length;
  return { dns, alignment, asked, advance: (ms: number) => (now += ms), unsetDomain: () => (rp = undefined) };
}

t.test('first sight leaves on the return path domain and warms the cache; later mail aligns with no look-up of its own', async (t) => {
  const { alignment, asked, advance } = await setup(t);
  t.equal(alignment.domainFor('Aligned.test'), RP, 'first message: the operator domain (never waits on DNS)');
  t.same(await alignment.check('aligned.test'), { aligned: true, returnPathDomain: 'psrp.aligned.test', via: 'cname' }, 'joins the look-up in flight');
  t.equal(asked(), 1);
  for (let i = 0; i < 50; i++) t.equal(alignment.domainFor('aligned.test'), 'psrp.aligned.test');
  t.equal(asked(), 1, 'fifty messages, no more queries');
  advance(REFRESH_MS);
  t.equal(alignment.domainFor('aligned.test'), 'psrp.aligned.test', 'a stale answer is used while it is refreshed');
  await alignment.check('aligned.test');
  t.equal(asked(), 2, 'refreshed once a minute');
});

t.test('no CNAME, another target, a DNS failure (kept from before), no prefix, no return path domain', async (t) => {
  const { dns, alignment, advance, unsetDomain } = await setup(t);
  t.match(await alignment.check('plain.test'), { aligned: false, returnPathDomain: RP, reason: 'no-cname', name: 'psrp.plain.test' });
  t.equal(alignment.domainFor('plain.test'), RP);
  t.match(await alignment.check('elsewhere.test'), { aligned: false, reason: 'other-target', detail: 'rp.other.test' });
  t.equal(alignment.domainFor('elsewhere.test'), RP, 'a CNAME elsewhere does not align: its MX is not ours');

  // RFC 8767: a resolver that fails keeps the last answer for sends; check-domain says what DNS says now.
  await alignment.check('aligned.test');
  dns.zones['psrp.aligned.test'] = { SERVFAIL: true };
  advance(REFRESH_MS);
  t.match(await alignment.check('aligned.test'), { aligned: false, returnPathDomain: RP, reason: 'dns-error' });
  t.equal(alignment.domainFor('aligned.test'), 'psrp.aligned.test', 'kept while DNS fails');
  t.match(await alignment.check('failing-first.test'), { aligned: false, reason: 'no-cname' }, 'NXDOMAIN');
  dns.zones['psrp.failing-first.test'] = { SERVFAIL: true };
  advance(REFRESH_MS);
  t.match(await alignment.check('failing-first.test'), { reason: 'dns-error' });
  t.equal(alignment.domainFor('failing-first.test'), RP, 'a failure with nothing known before: the operator domain');

  t.same(decideAlignment({ fromDomain: 'x.test', returnPathDomain: RP, prefix: undefined, seen: undefined }), { aligned: false, returnPathDomain: RP, reason: 'no-prefix' });
  t.same(decideAlignment({ fromDomain: 'sluice.test', returnPathDomain: RP, prefix: 'psrp', seen: undefined }), { aligned: true, returnPathDomain: RP, via: 'subdomain' }, 'the operator\'s own domain already aligns');
  unsetDomain();
  t.equal(alignment.domainFor('aligned.test'), undefined);
  t.equal(await alignment.check('aligned.test'), undefined);
});

t.test('without a prefix nothing is looked up', async (t) => {
  const { alignment, asked } = await setup(t, null);
  t.equal(alignment.domainFor('aligned.test'), RP);
  t.match(await alignment.check('aligned.test'), { aligned: false, reason: 'no-prefix' });
  t.equal(asked(), 0);
  t.equal(alignment.size, 0);
});

t.test('the From domain, and the MX reading b+<token>@<prefix>.<any domain> as the return path domain\'s', async (t) => {
  t.equal(fromDomainOf({ from_email: 'a@News.Example.', mail_from: 'b@other.test' }), 'news.example');
  t.equal(fromDomainOf({ from_email: null, mail_from: 'b@other.test' }), 'other.test');
  const token = 'b+1z.abcdefghijklmnop';
  t.equal(canonicalReturnPath(`${token}@PSRP.customer.test`, RP, 'psrp'), `${token}@${RP}`);
  t.equal(canonicalReturnPath(`${token}@psrp.customer.test`, RP, undefined), `${token}@psrp.customer.test`, 'no prefix: unchanged');
  t.equal(canonicalReturnPath(`${token}@other.customer.test`, RP, 'psrp'), `${token}@other.customer.test`, 'another label');
  t.equal(canonicalReturnPath('bob@psrp.customer.test', RP, 'psrp'), 'bob@psrp.customer.test', 'no token');
  t.equal(canonicalReturnPath(`${token}@psrp.`, RP, 'psrp'), `${token}@psrp.`);
});
