// Checks the outbound-connection policy in mail routing, against a local DNS and without dialling: MX hosts that are
// Sluice itself end the route (554 5.4.6, RFC 5321 §5.1 as Postfix), internal MX hosts bounce 550 5.4.4, and
// downstreams the policy refuses defer (4.4.4) — or bounce 5.4.6 when they are Sluice's own listener.
import t, { type Test } from 'tap';
import type { Config } from '../../../config/load.js';
import { classifyRouteFailure } from '../../../mta/delivery/bounce-rules.js';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { createDownstreamRouter } from '../../../mta/delivery/downstream-route.js';
import { createRouteResolver, type RouteResult } from '../../../mta/delivery/resolve-route.js';
import { createTargetGuard } from '../../../mta/delivery/target-guard.js';
import type { DownstreamAddress } from '../../../storage/ports/inbound-domains.js';
import { startDnsServer } from '../../helpers/dns-server.js';

const MX_PORT = 2525;
/** Sluice's own MX listener in these tests (nothing listens there: routing is judged, never dialled). */
const OWN = { host: '127.0.0.1', port: MX_PORT };

const outbound: Pick<Config, 'outbound'> = {
  outbound: {
    smarthost: undefined, smarthostUser: undefined, smarthostPassword: undefined, smarthostTls: 'starttls',
    transportMap: {}, mxPort: MX_PORT, publicIp: undefined, lockdown: 'dns', returnPathDomain: undefined, returnPathPrefix: undefined, feedbackAddress: undefined,
    mtaSts: 'off', mtaStsPort: 443, tlsCaFile: undefined, tlsReportsFrom: undefined, tlsReportsAccount: 'default', pools: {}, destinationLimits: {},
    shapingRules: {}, warmup: {},
  },
};

async function routing(t: Test, allow: string[]) {
  const dns = await startDnsServer(t, {
    'self.test': { MX: [{ preference: 10, exchange: 'mx.self.test' }] },
    'mx.self.test': { A: ['127.0.0.1'] },
    'self-first.test': { MX: [{ preference: 10, exchange: 'mx.self.test' }, { preference: 20, exchange: 'other.test' }] },
    'self-last.test': { MX: [{ preference: 10, exchange: 'other.test' }, { preference: 20, exchange: 'mx.self.test' }] },
    'other.test': { A: ['127.0.0.2'] },
    'implicit-self.test': { A: ['127.0.0.1'] },
    'private.test': { MX: [{ preference: 10, exchange: 'mx.private.test' }] },
    'mx.private.test': { A: ['10.0.0.25'] },
    'metadata.test': { MX: [{ preference: 10, exchange: 'mx.metadata.test' }] },
    'mx.metadata.test': { AAAA: ['::ffff:169.254.169.254'] },
    'mixed.test': { MX: [{ preference: 10, exchange: 'mx.private.test' }, { preference: 20, exchange: 'mx.public.test' }] },
    'mx.public.test': { A: ['192.0.2.25'] },
    'down.corp.test': { A: ['127.0.0.1'] },
  });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 });
  const guard = createTargetGuard({ resolver, allow: () => allow, listeners: () => [OWN], localAddresses: () => ['127.0.0.1', '::1'] });
  return { route: createRouteResolver({ config: outbound, resolver, guard }), guard, resolver };
}

const failure = (r: RouteResult) => (r.kind === 'hosts' ? undefined : classifyRouteFailure(r));

t.test('an MX that is Sluice itself loops back to myself: 554 5.4.6, only more preferred hosts are tried', async (t) => {
  // The loopback is allowed (a test stack's setting): what refuses is that the address:port is ours.
  const { route } = await routing(t, ['127.0.0.0/8', '::1/128']);
  const self = await route('self.test');
  t.same(self, { kind: 'refused', loop: true, permanent: true, reason: 'mail for self.test loops back to myself' });
  t.same(failure(self), { outcome: 'bounced', code: 554, status: '5.4.6', response: 'mail for self.test loops back to myself' });
  t.match(await route('self-first.test'), { kind: 'refused', loop: true }, 'our own MX is the best: less preferred ones are not tried');
  const last = await route('self-last.test');
  t.same(last.kind === 'hosts' && last.hosts.map((h) => `${h.name}[${h.address}]:${h.port}`), ['other.test[127.0.0.2]:2525'], 'a more preferred host is tried');
  t.match(await route('implicit-self.test'), { kind: 'refused', loop: true }, 'the A fallback too');
});

t.test('with the policy on by default, an MX on the loopback is this host (5.4.6); other internal MX hosts 550 5.4.4', async (t) => {
  const { route } = await routing(t, []);
  t.match(failure(await route('other.test')), { code: 554, status: '5.4.6', response: 'mail for other.test loops back to myself' });
  const priv = await route('private.test');
  t.match(priv, { kind: 'refused', loop: false, permanent: true });
  t.same(failure(priv), {
    outcome: 'bounced',
    code: 550,
    status: '5.4.4',
    response: 'the MX hosts of private.test resolve to a private address (RFC 1918); Sluice does not deliver to internal addresses unless the operator allows them in security.allow_private_targets',
  });
  t.match(failure(await route('metadata.test')), { code: 550, status: '5.4.4', response: /a link-local address/ }, 'an IPv4-mapped metadata address');
  const mixed = await route('mixed.test');
  t.same(mixed.kind === 'hosts' && mixed.hosts.map((h) => h.address), ['192.0.2.25'], 'the internal MX is skipped, the public one kept');
});

t.test('the operator allows an internal MX network; own listeners still need an exact address:port', async (t) => {
  const { route } = await routing(t, ['10.0.0.0/8']);
  const priv = await route('private.test');
  t.same(priv.kind === 'hosts' && priv.hosts.map((h) => h.address), ['10.0.0.25']);
  const own = await routing(t, ['127.0.0.1:2525']);
  t.same((await own.route('self.test')).kind, 'hosts', 'named exactly, our own address:port is a route');
});

t.test('downstreams: a refused target defers 4.4.4 (mail is kept); our own listener bounces 5.4.6', async (t) => {
  const { guard } = await routing(t, []);
  const downstreams: DownstreamAddress[] = [{ priority: 10, weight: 1, port: 2600, target: 'down.corp.test.' }];
  const domains = {
    findServedDomain: async (d: string) => (d === 'corp.test' ? ({ id: 1, domain: 'corp.test' } as never) : undefined),
    listDownstreams: async () => downstreams,
  };
  const route = createDownstreamRouter({ domains, guard });
  const refused = await route('corp.test');
  t.same(refused, { kind: 'refused', loop: false, permanent: false, reason: 'downstream down.corp.test resolves to a loopback address; refused by policy (security.allow_private_targets)' });
  t.match(failure(refused), { outcome: 'deferred', code: null, status: '4.4.4' });

  const open = await routing(t, ['127.0.0.0/8']);
  const allowed = createDownstreamRouter({ domains, guard: open.guard });
  const ok = await allowed('corp.test');
  t.same(ok.kind === 'hosts' && ok.hosts.map((h) => `${h.address}:${h.port}`), ['127.0.0.1:2600'], 'allowed: the address judged is the one dialled');
  downstreams[0] = { priority: 10, weight: 1, port: MX_PORT, target: 'down.corp.test.' };
  const loop = await allowed('corp.test');
  t.same(loop, { kind: 'refused', loop: true, permanent: true, reason: 'mail for corp.test loops back to myself' });
  t.match(failure(loop), { outcome: 'bounced', code: 554, status: '5.4.6' });
});
