// Owns the alert conditions a monitor can watch (names and descriptions are wire data, api.md §4.5) and the
// decisions behind the ones that are rates or limits.

/**
 * Every condition Sluice detects, with the `condition_description` of its alert payload. MailChannels confirms
 * `sender_id_sending_spam` / "Sender ID is sending SPAM" (api.md §1); the others follow its monitor types.
 */
export const ALERT_CONDITIONS = {
  sender_id_sending_spam: 'Sender ID is sending SPAM',
  sender_id_sending_virus: 'Sender ID is sending a virus',
  sender_id_blocked: 'Sender ID is blocked',
  sender_id_sending_to_invalid_recipients: 'Sender ID is sending to invalid recipients',
  sender_id_rejected_by_destination: 'Sender ID is rejected by destination',
  // MailChannels' nearest monitor type is "Sender ID blocked due to FBL" (api.md §1, name unconfirmed); Sluice
  // blocks nobody for complaints, it only reports the rate, so the name says what happens, not a block.
  sender_id_receiving_complaints: 'Sender ID is receiving spam complaints',
} as const;

export type AlertCondition = keyof typeof ALERT_CONDITIONS;
export const ALERT_CONDITION_NAMES = Object.keys(ALERT_CONDITIONS) as AlertCondition[];

/** Whether `v` names a condition (routes, CLI). */
export function isAlertCondition(v: string): v is AlertCondition {
  return Object.hasOwn(ALERT_CONDITIONS, v);
}

/** Monitor intervals: at most one alert per condition and sender identity per interval, 1 to 24 hours. */
export const MIN_INTERVAL_HOURS = 1;
export const MAX_INTERVAL_HOURS = 24;

/**
 * Whether a sender identity's hard-bounce rate fires `sender_id_sending_to_invalid_recipients`: at least `min`
 * finished recipients (delivered or bounced) in the window, and recipient-class bounces among them at `rate` or more.
 */
export function invalidRecipientsExceeded(counts: { finished: number; invalid: number }, limits: { rate: number; min: number }): boolean {
  return counts.finished >= limits.min && counts.invalid / counts.finished >= limits.rate;
}

/**
 * Whether a sender identity's complaint rate fires `sender_id_receiving_complaints`: at least `min` delivered
 * recipients in the window, and feedback-loop complaints among them at `rate` or more. The minimum matters more
 * than for bounces: at 0.3 % a single complaint is over the rate among fewer than 334 recipients.
 */
export function complaintRateExceeded(counts: { delivered: number; complaints: number }, limits: { rate: number; min: number }): boolean {
  return counts.delivered >= limits.min && counts.complaints / counts.delivered >= limits.rate;
}

/**
 * Whether a sender identity's strikes within the window block it (`abuse.block_confirmed`, `abuse.block_suspect`);
 * the reason text names the limit that was reached.
 */
export function decideBlock(
  counts: { confirmed: number; suspect: number },
  limits: { confirmed: number; suspect: number; windowHours: number },
): { block: false } | { block: true; reason: string } {
  if (counts.confirmed >= limits.confirmed) {
    return { block: true, reason: `${counts.confirmed} CONFIRMED spam or virus messages within ${limits.windowHours} h` };
  }
  if (counts.suspect >= limits.suspect) {
    return { block: true, reason: `${counts.suspect} SUSPECT messages within ${limits.windowHours} h` };
  }
  return { block: false };
}
