// Checks the rate decisions behind the alert conditions: the complaint rate (and, beside it, the hard-bounce rate).
import t from 'tap';
import { ALERT_CONDITIONS, complaintRateExceeded, invalidRecipientsExceeded, isAlertCondition } from '../../filters/alert-conditions.js';

const DEFAULTS = { rate: 0.003, min: 1000 };

t.test('the complaint rate fires at or above abuse.complaint_rate, only past abuse.complaint_min delivered', async (t) => {
  t.equal(complaintRateExceeded({ delivered: 1000, complaints: 3 }, DEFAULTS), true, '0.3 % of 1000: at the rate fires');
  t.equal(complaintRateExceeded({ delivered: 2000, complaints: 6 }, DEFAULTS), true, '0.3 % of 2000: exactly at it, no rounding loss');
  t.equal(complaintRateExceeded({ delivered: 1001, complaints: 3 }, DEFAULTS), false, 'just under 0.3 %');
  t.equal(complaintRateExceeded({ delivered: 999, complaints: 999 }, DEFAULTS), false, 'under the minimum nothing is judged');
  t.equal(complaintRateExceeded({ delivered: 1000, complaints: 0 }, DEFAULTS), false, 'no complaints');
  t.equal(complaintRateExceeded({ delivered: 0, complaints: 0 }, { rate: 0.003, min: 1 }), false, 'nothing delivered: no rate (0/0)');
  t.equal(complaintRateExceeded({ delivered: 1, complaints: 1 }, { rate: 0.003, min: 1 }), true, 'an operator\'s min 1: the first complaint fires');
  t.equal(complaintRateExceeded({ delivered: 333, complaints: 1 }, { rate: 0.003, min: 10 }), true, 'why the minimum is not 10: one complaint in 333');
});

t.test('the hard-bounce rate, judged the same way over finished recipients', async (t) => {
  t.equal(invalidRecipientsExceeded({ finished: 10, invalid: 1 }, { rate: 0.1, min: 10 }), true);
  t.equal(invalidRecipientsExceeded({ finished: 9, invalid: 9 }, { rate: 0.1, min: 10 }), false);
  t.equal(invalidRecipientsExceeded({ finished: 11, invalid: 1 }, { rate: 0.1, min: 10 }), false);
});

t.test('the complaint condition is one a monitor can watch, with its wire description', async (t) => {
  t.equal(isAlertCondition('sender_id_receiving_complaints'), true);
  t.equal(ALERT_CONDITIONS.sender_id_receiving_complaints, 'Sender ID is receiving spam complaints');
});
