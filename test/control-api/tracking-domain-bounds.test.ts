// Checks accounts.max_tracking_domains through the real API and a local DNS server (issue 31): a verified domain past
// the account's bound answers 422 in the /tx/v1 shape and is not stored; a delete makes room.
import t from 'tap';
import { world } from '../helpers/tracking-world.js';

const CTD = '/tx/v1/custom-tracking-domains';

t.test('accounts.max_tracking_domains: past it 422, nothing stored; a delete makes room', async (t) => {
  const w = await world(t, { SLUICE_ACCOUNTS_MAX_TRACKING_DOMAINS: '1' });
  const api = (method: string, path: string, body?: unknown) => w.stack.api(method, path, { key: w.key, ...(body ? { body } : {}) });
  /** Publishes what the first answer asks for, then registers again: the verified answer. */
  async function register(name: string, hostname: string) {
    const reg = { name, hostname, scope: 'click' };
    const setup = await api('POST', CTD, reg);
    t.equal(setup.status, 202);
    w.dns.zones[`_sluice-verify.${hostname}`] = { TXT: [setup.body.token] };
    w.dns.zones[hostname] = { A: ['127.0.0.1'] };
    return api('POST', CTD, reg);
  }
  t.equal((await register('one', 'one.brand.test')).status, 201);
  const full = await register('two', 'two.brand.test');
  t.equal(full.status, 422);
  t.same(full.body, { errors: ['the account has reached its limit of 1 custom tracking domains; delete one first'] });
  t.equal((await api('GET', CTD)).body.total, 1, 'nothing stored');
  t.equal((await api('DELETE', `${CTD}/one.brand.test/click`)).status, 204);
  t.equal((await api('POST', CTD, { name: 'two', hostname: 'two.brand.test', scope: 'click' })).status, 201, 'a delete makes room');
});
