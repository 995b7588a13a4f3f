// Checks the CPU pool: a large message's tokens and a signed one's authentication come from a worker thread equal to
// what the event loop computes, DNS answered by the main thread's resolver; small or unsigned ones stay on the loop;
// a worker stopped mid-task fails over to the loop with the same result.
import { Readable } from 'node:stream';
import pino from 'pino';
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { tokenizeMessage } from '../../filters/bayes-tokens.js';
import { checkAuthentication } from '../../filters/inbound-auth.js';
import { createCpuPool, OFFLOAD_MIN_BYTES } from '../../mta/cpu-pool.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { dkimDnsRecord, generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';
import { signMessage } from '../../mta/outbound/dkim-sign.js';
import { startDnsServer } from '../helpers/dns-server.js';

const logger = pino({ level: 'silent' });
const pair = await generateDkimKeyPair(1024);
const dkim = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);
// The local DNS server the filters' resolver asks (test/helpers/dns-server.ts); the worker's questions come through it.
const dns = await startDnsServer(t, {
  'sender.test': { TXT: ['v=spf1 ip4:192.0.2.10 -all'] },
  [dkim.name]: { TXT: [dkim.value] },
  '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'] },
});
const resolver = mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 }));

/** A text message of about `kb` KiB of varied words (so its tokens are many), signed when asked. */
async function message(kb: number, sign: boolean): Promise<Buffer> {
  const words = ['invoice', 'meeting', 'quarterly', 'report', 'http://example.org/a', 'offer', 'lunch', 'déjà', 'vu'];
  let text = '';
  for (let i = 0; text.length < kb * 1024; i++) text += `${words[i % words.length]}${i % 97} ${i % 5 === 0 ? '\n' : ''}`;
  const raw = await new MailComposer({ from: 'a@sender.test', to: 'bob@corp.test', subject: 'Numbers', text, messageId: '<m@sender.test>' })
    .compile()
    .build();
  return sign ? signMessage(raw, { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem }) : raw;
}

const authInput = { clientIp: '192.0.2.10', helo: 'mail.sender.test', mailFrom: 'a@sender.test' };
const deps = { resolver, authservId: 'mx.sluice.test' };

t.test('a large message is tokenised on a worker, with the tokens the event loop makes', async (t) => {
  const pool = createCpuPool({ threads: 1, logger });
  t.teardown(() => pool.close());
  const raw = await message(64, false);
  const tokens = await pool.tokenize(raw);
  t.same(tokens, tokenizeMessage(raw), 'same tokens, same order');
  t.ok(tokens.length > 100, 'a message of many tokens');
  t.same({ ...pool.counts }, { offloaded: 1, inline: 0, failedOver: 0 });
});

t.test('a small message stays on the event loop', async (t) => {
  const pool = createCpuPool({ threads: 1, logger });
  t.teardown(() => pool.close());
  const raw = await message(1, false);
  t.ok(raw.length < OFFLOAD_MIN_BYTES);
  t.same(await pool.tokenize(raw), tokenizeMessage(raw));
  t.same({ ...pool.counts }, { offloaded: 0, inline: 1, failedOver: 0 });
});

t.test('a large signed message is authenticated on a worker: the same verdict, its DNS through our resolver', async (t) => {
  const pool = createCpuPool({ threads: 1, logger });
  t.teardown(() => pool.close());
  const raw = await message(64, true);
  const asked = dns.queries.length;
  const v = await pool.authenticate({ ...authInput, whole: raw, open: () => Readable.from([raw]) }, deps);
  t.same({ ...pool.counts }, { offloaded: 1, inline: 0, failedOver: 0 });
  t.ok(dns.queries.slice(asked).includes(`${dkim.name} TXT`), 'the DKIM key was asked through the main thread\'s resolver');
  t.equal(v.reason, 'dmarc-pass');
  t.same(v.results.dkim, [{ result: 'pass', domain: 'sender.test', selector: 'sel', aligned: true }]);
  t.same(v, await checkAuthentication({ ...authInput, raw: Readable.from([raw]) }, deps), 'what the event loop finds');

  // A changed body: the worker computes the body hash and finds the mismatch as the loop does.
  const changed = Buffer.from(raw.toString('latin1').replace('invoice0', 'invoice1'), 'latin1');
  const bad = await pool.authenticate({ ...authInput, whole: changed, open: () => Readable.from([changed]) }, deps);
  t.equal(bad.reason, 'dkim-fail');
  t.same(bad, await checkAuthentication({ ...authInput, raw: Readable.from([changed]) }, deps));
  t.equal(pool.counts.offloaded, 2);
});

t.test('unsigned mail, or mail not held whole, is authenticated on the event loop', async (t) => {
  const pool = createCpuPool({ threads: 1, logger });
  t.teardown(() => pool.close());
  const unsigned = await message(64, false);
  const v = await pool.authenticate({ ...authInput, whole: unsigned, open: () => Readable.from([unsigned]) }, deps);
  t.same(v.results.dkim, [{ result: 'none', domain: null, selector: null, aligned: false }]);
  t.equal(v.reason, 'dmarc-pass', 'SPF aligned');
  const signed = await message(64, true);
  const w = await pool.authenticate({ ...authInput, whole: undefined, open: () => Readable.from([signed]) }, deps);
  t.equal(w.reason, 'dmarc-pass');
  t.same({ ...pool.counts }, { offloaded: 0, inline: 2, failedOver: 0 });
});

t.test('a worker stopped mid-task: the step runs on the event loop with the same result', async (t) => {
  const pool = createCpuPool({ threads: 1, logger });
  const raw = await message(64, false);
  const pending = pool.tokenize(raw);
  await pool.close();
  t.same(await pending, tokenizeMessage(raw));
  t.same({ ...pool.counts }, { offloaded: 1, inline: 0, failedOver: 1 });
  // Closed: later steps run on the loop.
  t.same(await pool.tokenize(raw), tokenizeMessage(raw));
  t.equal(pool.counts.inline, 1);
});

t.test('no threads: every step on the event loop', async (t) => {
  const pool = createCpuPool({ threads: 0, logger });
  t.teardown(() => pool.close());
  const raw = await message(64, true);
  t.same(await pool.tokenize(raw), tokenizeMessage(raw));
  t.equal((await pool.authenticate({ ...authInput, whole: raw, open: () => Readable.from([raw]) }, deps)).reason, 'dmarc-pass');
  t.same({ ...pool.counts }, { offloaded: 0, inline: 2, failedOver: 0 });
});
