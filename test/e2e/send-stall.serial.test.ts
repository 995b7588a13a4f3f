// Owns the event-loop bound of issue 31: the largest send request the limits allow never stalls the loop ≥ 100 ms.
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { outboundWorld } from '../helpers/outbound-world.js';
import { judgeStalls, measured, probesAnswered, runStallChild, STALL_CHILD } from '../helpers/stall.js';

/** The largest send request while /healthz and the MX greeting are probed (both share the event loop). */
async function send(t: Test) {
  const w = await outboundWorld(t);
  const max = w.stack.config.send.maxRecipients;
  // Every personalization its own message (the costliest shape: one composition, signature, scan and body each), a
  // text part of 32 KiB each (32 MB composed, signed and stored in all); the recipients fill the request's cap.
  const text = 'All work and no play makes a long message. '.repeat(750);
  const personalizations = Array.from({ length: max }, (_, i) => ({ to: [{ email: `r${i}@rcpt.test` }] }));
  const body = { personalizations, from: { email: 'app@sender.test' }, subject: 'Big', content: [{ type: 'text/plain', value: text }] };
  const { result: res, probes } = await measured({ http: w.stack.http.port, mx: w.stack.mx.port }, () => w.rest(body));
  return { status: res.status, text: res.text, queued: await w.deliveries('queued'), max, probes };
}

if (STALL_CHILD) await runStallChild({ send });
else {
  const { default: t } = await import('tap');
  // On 4cf4889 every measurement stalled 1,286–2,418 ms.
  t.test('the largest send request the limits allow: the event loop never stalls 100 ms (measured in a process of its own)', async (t) => {
    judgeStalls(t, fileURLToPath(import.meta.url), 'send', (t, f) => {
      t.equal(f.status, 202, String(f.text));
      t.equal(f.queued, f.max, 'every recipient has a delivery');
      probesAnswered(t, f);
    });
  });
}
