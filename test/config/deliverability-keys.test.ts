// Tests of the deliverability keys' data: sending pools and destination limits, from TOML and from the environment.
import t from 'tap';
import { destinationLimitOf, parseDestinationLimits, parsePools } from '../../config/keys-deliverability.js';
import { loadConfig } from '../../config/load.js';

t.test('pools: TOML lists and the environment form; bad names, addresses and entries are refused', async (t) => {
  t.same(parsePools({ blue: ['192.0.2.1 MTA1.example.net.'] }, 'file'), { blue: [{ address: '192.0.2.1', ehlo: 'mta1.example.net' }] });
  t.same(parsePools('a=192.0.2.1 m1.test+::1 m2.test,b=192.0.2.3 m3.test', 'env'), {
    a: [{ address: '192.0.2.1', ehlo: 'm1.test' }, { address: '::1', ehlo: 'm2.test' }],
    b: [{ address: '192.0.2.3', ehlo: 'm3.test' }],
  });
  t.throws(() => parsePools({ Blue: ['192.0.2.1 m.test'] }, 'file'), /not a pool name/);
  t.throws(() => parsePools({ blue: ['mail.test m.test'] }, 'file'), /not an IP address/);
  t.throws(() => parsePools({ blue: ['192.0.2.1'] }, 'file'), /not "address ehlo-name"/);
  t.throws(() => parsePools({ blue: [] }, 'file'), /at least one address/);
  t.throws(() => parsePools('blue', 'env'), /name=address ehlo/);
});

t.test('destination limits: both forms, unknown fields refused; the most specific pattern wins', async (t) => {
  const limits = parseDestinationLimits({ '*.outlook.test': { connections: 2 }, '*.protection.outlook.test': { messages_per_minute: 60 }, 'mx.a.test.': { messages_per_connection: 5 } }, 'file');
  t.same(limits['*.outlook.test'], { connections: 2, messagesPerConnection: 0, messagesPerMinute: 0 });
  t.same(destinationLimitOf(limits, 'x-y.mail.protection.outlook.test')?.pattern, '*.protection.outlook.test', 'the longest suffix');
  t.same(destinationLimitOf(limits, 'other.outlook.test')?.pattern, '*.outlook.test');
  t.same(destinationLimitOf(limits, 'MX.A.test.')?.pattern, 'mx.a.test', 'an exact name, case and dot aside');
  t.equal(destinationLimitOf(limits, 'outlook.test'), undefined, 'a suffix pattern does not match the bare name');
  t.same(parseDestinationLimits('*.g.test=3:0:100', 'env'), { '*.g.test': { connections: 3, messagesPerConnection: 0, messagesPerMinute: 100 } });
  t.throws(() => parseDestinationLimits({ 'a.test': { conections: 2 } }, 'file'), /unknown field conections/);
  t.throws(() => parseDestinationLimits({ 'a.test': { connections: -1 } }, 'file'), /whole number/);
  t.throws(() => parseDestinationLimits('a.test=1:2', 'env'), /pattern=connections/);
  t.throws(() => parseDestinationLimits({ '*': { connections: 1 } }, 'file'), /not a host name/);
});

t.test('keys that act only with another are refused alone, never ignored', async (t) => {
  const load = (env: Record<string, string>) => loadConfig({ env: { SLUICE_DATA_DIR: '/tmp/x', ...env }, cwd: '/' });
  t.throws(() => load({ SLUICE_OUTBOUND_FEEDBACK_ADDRESS: 'fbl@b.test' }), { key: 'outbound.feedback_address', message: /has no effect without outbound.return_path_domain/ });
  t.doesNotThrow(() => load({ SLUICE_OUTBOUND_FEEDBACK_ADDRESS: 'fbl@b.test', SLUICE_OUTBOUND_RETURN_PATH_DOMAIN: 'b.test' }));
  t.throws(() => load({ SLUICE_OUTBOUND_RETURN_PATH_PREFIX: 'psrp' }), { key: 'outbound.return_path_prefix', message: /has no effect without outbound.return_path_domain/ });
  t.equal(load({ SLUICE_OUTBOUND_RETURN_PATH_PREFIX: ' PSRP ', SLUICE_OUTBOUND_RETURN_PATH_DOMAIN: 'b.test' }).config.outbound.returnPathPrefix, 'psrp');
  t.throws(() => load({ SLUICE_OUTBOUND_RETURN_PATH_PREFIX: 'psrp.mail', SLUICE_OUTBOUND_RETURN_PATH_DOMAIN: 'b.test' }), { key: 'outbound.return_path_prefix', message: /not one DNS label/ });
  t.throws(() => load({ SLUICE_OUTBOUND_TLS_REPORTS_ACCOUNT: 'ops' }), { key: 'outbound.tls_reports_account', message: /has no effect without outbound.tls_reports_from/ });
  t.equal(load({ SLUICE_OUTBOUND_TLS_REPORTS_ACCOUNT: 'ops', SLUICE_OUTBOUND_TLS_REPORTS_FROM: 'tls@a.test' }).config.outbound.tlsReportsAccount, 'ops');
  t.throws(() => load({ SLUICE_OUTBOUND_MTA_STS: 'off', SLUICE_OUTBOUND_TLS_REPORTS_FROM: 'tls@a.test' }), { key: 'outbound.tls_reports_from', message: /has no effect while outbound.mta_sts is "off"/ });
  t.throws(() => load({ SLUICE_OUTBOUND_MTA_STS: 'off', SLUICE_OUTBOUND_TLS_CA_FILE: 'ca.pem' }), { key: 'outbound.tls_ca_file', message: /has no effect/ });
  t.doesNotThrow(() => load({ SLUICE_OUTBOUND_MTA_STS: 'off' }));
});
