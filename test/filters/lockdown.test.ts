// Checks the Domain Lockdown decision table.
import t from 'tap';
import { decideLockdown, parseLockdownRecords } from '../../filters/lockdown.js';

t.test('parses v=sluice1 records with several auth= tags, ignores others', async (t) => {
  t.same(parseLockdownRecords([['v=sluice1 auth=acme auth=Other'], ['v=spf1 -all'], ['v=sluice1', ' auth=third']]), ['acme', 'other', 'third']);
  t.same(parseLockdownRecords([['v=sluice2 auth=acme'], ['auth=acme']]), []);
});

t.test('decision', async (t) => {
  const dns = (txt: string[]) => ({ ok: true as const, records: txt.map((x) => [x]) });
  t.same(decideLockdown({ mode: 'off', operatorAllowed: false, handles: ['a'], dns: { ok: false, kind: 'temp' } }), { action: 'pass', reason: 'lockdown-off' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: true, handles: ['a'], dns: { ok: false, kind: 'nxdomain' } }), { action: 'pass', reason: 'lockdown-operator-allowed' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['acme'], dns: dns(['v=sluice1 auth=acme']) }), { action: 'pass', reason: 'lockdown-dns-authorized' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['sub1', 'acme'], dns: dns(['v=sluice1 auth=acme']) }).action, 'pass', 'parent authorization covers sub-accounts');
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['evil'], dns: dns(['v=sluice1 auth=acme']) }), { action: 'reject', reason: 'lockdown-not-authorized' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['acme'], dns: { ok: false, kind: 'nxdomain' } }), { action: 'reject', reason: 'lockdown-no-record' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['acme'], dns: { ok: false, kind: 'temp' } }), { action: 'reject', reason: 'lockdown-dns-error' });
  t.same(decideLockdown({ mode: 'dns', operatorAllowed: false, handles: ['acme'], dns: dns(['v=spf1 -all']) }), { action: 'reject', reason: 'lockdown-no-record' });
});
