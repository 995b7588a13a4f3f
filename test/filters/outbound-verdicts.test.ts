// Checks the grading of outbound mail into the seed's dispositions, the one policy step and what counts as a strike.
import t from 'tap';
import {
  alertOriginator, CLAMD_FAILED, decideOutboundAction, gradeSpam, gradeVirus, RSPAMD_FAILED, senderIdentity, strikeOf,
} from '../../filters/outbound-verdicts.js';

const builtin = (score: number, names: string[] = []) => ({ score, rules: names.map((name) => ({ name, score })) });
const grade = (score: number, extra: Partial<Parameters<typeof gradeSpam>[0]> = {}) =>
  gradeSpam({ builtin: builtin(score), threshold: 5, confirmedThreshold: 15, bulk: false, ...extra });

t.test('spam grades', async (t) => {
  t.match(gradeSpam({ builtin: builtin(1000, ['GTUBE']), threshold: 5, confirmedThreshold: 15, bulk: false }), { disposition: 'CONFIRMED', reason: 'gtube' });
  t.match(grade(0, { rspamd: { ok: true, action: 'reject', score: 15, symbols: ['X'] } }), { disposition: 'CONFIRMED', reason: 'rspamd-reject', score: 15 });
  t.match(grade(10, { rspamd: { ok: true, action: 'no action', score: 5 } as never }), { disposition: 'CONFIRMED', reason: 'score-confirmed', score: 15 });
  t.match(grade(5), { disposition: 'SUSPECT', reason: 'score-suspect' });
  t.match(grade(0, { rspamd: { ok: true, action: 'add header', score: 2, symbols: [] } }), { disposition: 'SUSPECT', reason: 'rspamd-action' });
  t.match(grade(0, { rspamd: { ok: true, action: 'rewrite subject', score: 2, symbols: [] } }), { disposition: 'SUSPECT', reason: 'rspamd-action' });
  t.match(grade(4.9, { rspamd: { ok: true, action: 'greylist', score: 0, symbols: [] } }), { disposition: 'UNKNOWN', reason: 'below-threshold' });
  t.match(grade(0, { bulk: true }), { disposition: 'BULK', reason: 'bulk' });
  t.match(grade(6, { bulk: true }), { disposition: 'SUSPECT' }, 'spam beats bulk');
});

t.test('a failed rspamd grades on the built-in score and says so', async (t) => {
  const down = { ok: false as const, error: 'rspamd: ECONNREFUSED' };
  t.match(grade(0, { rspamd: down }), { disposition: 'UNKNOWN', reason: RSPAMD_FAILED, rspamd: { error: 'rspamd: ECONNREFUSED' } });
  t.match(grade(6, { rspamd: down }), { disposition: 'SUSPECT', reason: RSPAMD_FAILED });
  t.match(gradeSpam({ builtin: builtin(1000, ['GTUBE']), rspamd: down, threshold: 5, confirmedThreshold: 15, bulk: false }), { disposition: 'CONFIRMED', reason: 'gtube' });
});

t.test('virus grades', async (t) => {
  t.same(gradeVirus({ eicar: true }), { disposition: 'CONFIRMED', reason: 'eicar' }, 'EICAR without clamd');
  t.same(gradeVirus({ eicar: false }), { disposition: 'UNKNOWN', reason: 'not-scanned' });
  t.same(gradeVirus({ eicar: false, clamd: { ok: true, infected: false } }), { disposition: 'UNKNOWN', reason: 'clean' });
  t.same(gradeVirus({ eicar: false, clamd: { ok: true, infected: true, signature: 'Sluice.Test.Marker.UNOFFICIAL' } }), { disposition: 'CONFIRMED', reason: 'clamd-signature', signature: 'Sluice.Test.Marker.UNOFFICIAL' });
  t.match(gradeVirus({ eicar: false, clamd: { ok: true, infected: true, signature: 'Heuristics.Phishing.Email.SpoofedDomain' } }), { disposition: 'HIGH' });
  t.match(gradeVirus({ eicar: false, clamd: { ok: true, infected: true, signature: 'PUA.Win.Tool.Agent' } }), { disposition: 'MEDIUM' });
  t.same(gradeVirus({ eicar: false, clamd: { ok: false, error: 'clamd: x' } }), { disposition: 'UNKNOWN', reason: CLAMD_FAILED, clamd: { error: 'clamd: x' } });
  t.match(gradeVirus({ eicar: true, clamd: { ok: false, error: 'clamd: x' } }), { disposition: 'CONFIRMED', reason: 'eicar' }, 'EICAR stands when clamd is down');
});

t.test('the policy step', async (t) => {
  const clean = grade(0);
  const confirmed = grade(20);
  const virus = gradeVirus({ eicar: true });
  const noVirus = gradeVirus({ eicar: false });
  const down = gradeVirus({ eicar: false, clamd: { ok: false, error: 'x' } });
  const act = (policy: 'enforce' | 'monitor' | 'off', spam = clean, v = noVirus, onScannerError: 'tempfail' | 'accept' = 'tempfail') =>
    decideOutboundAction({ policy, spam, virus: v, onScannerError });
  t.same(act('enforce'), { action: 'send', reason: 'clean' });
  t.same(act('enforce', confirmed), { action: 'refuse', reason: 'spam-confirmed' });
  t.same(act('enforce', confirmed, virus), { action: 'refuse', reason: 'virus-confirmed' });
  t.same(act('enforce', grade(6)), { action: 'send', reason: 'clean' }, 'SUSPECT is sent');
  t.same(act('enforce', clean, down), { action: 'tempfail', reason: CLAMD_FAILED });
  t.same(act('enforce', grade(0, { rspamd: { ok: false, error: 'x' } })), { action: 'tempfail', reason: RSPAMD_FAILED });
  t.same(act('enforce', clean, down, 'accept'), { action: 'send', reason: 'scanner-error-accepted' });
  t.same(act('enforce', confirmed, down), { action: 'refuse', reason: 'spam-confirmed' }, 'a certain verdict wins over a failed scanner');
  t.same(act('monitor', confirmed, virus), { action: 'send', reason: 'monitor' });
  t.same(act('monitor', clean, down), { action: 'tempfail', reason: CLAMD_FAILED }, 'monitor follows on_scanner_error too');
  t.same(act('off', confirmed, down), { action: 'send', reason: 'policy-off' });
});

t.test('strikes and sender identities', async (t) => {
  t.equal(strikeOf('CONFIRMED', 'UNKNOWN'), 'confirmed');
  t.equal(strikeOf('UNKNOWN', 'CONFIRMED'), 'confirmed');
  t.equal(strikeOf('SUSPECT', 'UNKNOWN'), 'suspect');
  t.equal(strikeOf('UNKNOWN', 'HIGH'), 'suspect');
  t.equal(strikeOf('BULK', 'MEDIUM'), 'suspect');
  t.equal(strikeOf('BULK', 'UNKNOWN'), undefined);
  t.equal(senderIdentity('acme', 'App@Sender.Test'), 'acme|x-authuser|app@sender.test');
});

t.test('an alert\'s originator: the AUTH user of a submission, the envelope sender of a REST send (api.md §4.5)', async (t) => {
  const id = 'acme|x-authuser|app@sender.test';
  t.same(alertOriginator('acme|x-authuser|joe', { auth: 'joe', envelopeSender: 'bounce@sender.test' }), { originator: 'joe', originator_type: 'x-authuser' });
  t.same(alertOriginator(id, { auth: 'api-key:7', envelopeSender: 'bounce@sender.test' }), { originator: 'bounce@sender.test', originator_type: 'x-sender' });
  t.same(alertOriginator(id, { auth: 'api-key:7', envelopeSender: '' }), { originator: 'app@sender.test', originator_type: 'x-authuser' }, 'no envelope sender: the identity\'s user');
  t.same(alertOriginator(id, undefined), { originator: 'app@sender.test', originator_type: 'x-authuser' }, 'no message');
});
