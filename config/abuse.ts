// Owns the keys of outbound abuse control: when a sender identity is blocked, how often it may be delisted, and the
// hard-bounce and complaint rates that fire its alerts (mta/outbound/sender-abuse.ts, mta/jobs/alert-monitors.ts).
import { key } from './key-def.js';
import { integer, parseRate } from './values.js';

/** `abuse.*`: the block thresholds and window, the delisting limit, the invalid-recipient and complaint alerts. */
export const ABUSE_KEYS = {
  blockConfirmed: key({
    doc: 'CONFIRMED spam or virus messages from one sender identity within abuse.block_window_hours that block it (further sends refused until delisted).',
    defaultText: '3',
    default: () => 3,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  blockSuspect: key({
    doc: 'SUSPECT spam (or HIGH/MEDIUM virus) messages from one sender identity within abuse.block_window_hours that block it.',
    defaultText: '10',
    default: () => 10,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  blockWindowHours: key({
    doc: 'The window, in hours, over which a sender identity\'s CONFIRMED and SUSPECT messages are counted toward a block.',
    defaultText: '24',
    default: () => 24,
    parse: integer(1, 720, 'hours'),
  }),
  delistPerDay: key({
    doc: 'Delistings of one sender identity through POST /outbound/v1/remediation within 24 hours; the next is refused with 429 and needs the operator (sluice senders unblock).',
    defaultText: '2',
    default: () => 2,
    parse: integer(0, 100, 'a count'),
  }),
  invalidRecipientRate: key({
    doc: 'Hard-bounce rate (recipient-class 5.1.x/5.2.1 among a sender identity\'s finished recipients within a monitor\'s interval) that fires sender_id_sending_to_invalid_recipients.',
    defaultText: '0.1',
    default: () => 0.1,
    parse: parseRate,
  }),
  invalidRecipientMin: key({
    doc: 'Finished recipients a sender identity needs within a monitor\'s interval before its hard-bounce rate is judged.',
    defaultText: '10',
    default: () => 10,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  // 0.3 %: the spam rate Gmail's and Yahoo's bulk-sender requirements (February 2024) tell senders never to reach.
  complaintRate: key({
    doc: 'Complaint rate (feedback-loop spam complaints among a sender identity\'s delivered recipients of mail accepted within a monitor\'s interval) that fires sender_id_receiving_complaints.',
    defaultText: '0.003',
    default: () => 0.003,
    parse: parseRate,
  }),
  // Not 10 as for bounces: at 0.3 % one complaint alone is over the rate among fewer than 334 recipients; from 1000
  // on it takes at least three, so the first complaint a small sender gets (often a mis-click) does not fire.
  complaintMin: key({
    doc: 'Delivered recipients a sender identity needs within a monitor\'s interval before its complaint rate is judged.',
    defaultText: '1000',
    default: () => 1000,
    parse: integer(1, 1_000_000, 'a count'),
  }),
};
