// Checks the route choice by message kind: relayed inbound mail goes to downstreams, outbound sends and DSNs do not.
import t from 'tap';
import { createRouter } from '../../../mta/delivery/router.js';
import type { RouteResult } from '../../../mta/delivery/resolve-route.js';

t.test('relay → downstream router; outbound and dsn → outbound router', async (t) => {
  const asked: string[] = [];
  const route = (via: 'downstream' | 'mx') => async (domain: string): Promise<RouteResult> => {
    asked.push(`${via}:${domain}`);
    return { kind: 'hosts', via, hosts: [] };
  };
  const router = createRouter({ outbound: route('mx'), downstream: route('downstream') });
  t.same(await router('corp.test', { kind: 'relay' }), { kind: 'hosts', via: 'downstream', hosts: [] });
  t.same(await router('rcpt.test', { kind: 'outbound' }), { kind: 'hosts', via: 'mx', hosts: [] });
  t.same(await router('sender.test', { kind: 'dsn' }), { kind: 'hosts', via: 'mx', hosts: [] });
  t.same(asked, ['downstream:corp.test', 'mx:rcpt.test', 'mx:sender.test']);
});
