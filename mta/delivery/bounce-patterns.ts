// Owns reading bounces that are not RFC 3464 DSNs (qmail, old Exim and Sendmail, hand-rolled ones), with rules as data.
import type { HeaderField } from '../../filters/message-headers.js';
import { headerValues } from '../../filters/message-headers.js';

/** What a non-standard bounce says happened to the message: failed for good, or delayed (still being tried). */
export interface TextBounce {
  action: 'failed' | 'delayed';
  /** RFC 3463 status: the reply quoted in the text when it has one, else the rule's. */
  status: string;
  /** The rule that matched (logged). */
  rule: string;
  /** The line that matched, or the quoted SMTP reply: the report's Diagnostic-Code in effect. */
  diagnostic: string;
}

/**
 * The rules, first match wins, each naming the wording receivers use. Delays before the general failure (a delay
 * warning also says "not delivered"); the mailbox's own failures first of all (RFC 3463 5.1.1 and 5.2.2: the first
 * is the one that suppresses the recipient).
 */
export const BOUNCE_PATTERNS: readonly { name: string; action: TextBounce['action']; status: string; pattern: RegExp }[] = [
  {
    name: 'mailbox-unknown',
    action: 'failed',
    status: '5.1.1',
    pattern: /\b(user unknown|unknown (user|recipient|mailbox)|no such (user|mailbox|recipient|address)|mailbox (is )?(unavailable|not found|does not exist)|recipient (address )?rejected|invalid (recipient|mailbox)|address rejected|no mailbox here by that name|account (has been |is )?(disabled|deactivated|inactive))\b/i,
  },
  { name: 'mailbox-full', action: 'failed', status: '5.2.2', pattern: /\b(mailbox (is )?full|over quota|quota (exceeded|full)|exceeded (its|the) storage)\b/i },
  {
    name: 'delayed',
    action: 'delayed',
    status: '4.4.7',
    pattern: /\b(has been delayed|delivery (is |has been )?delayed|not yet been delivered|will (continue to )?(retry|try)|temporarily (deferred|suspended)|still trying)\b/i,
  },
  {
    name: 'failed',
    action: 'failed',
    status: '5.0.0',
    pattern: /\b(could not be delivered|couldn't be delivered|permanent (error|failure|fatal error)|delivery (has )?failed|undeliverable|failed permanently)\b/i,
  },
];

/** An SMTP reply quoted in the text (`550 5.1.1 …`, `550-5.1.1`) or qmail's `(#5.1.1)`. */
const QUOTED_REPLY = /\b([45]\d\d)[ -]#?([45]\.\d{1,3}\.\d{1,3})\b[^\r\n]*/;
const QMAIL_STATUS = /\(#([45]\.\d{1,3}\.\d{1,3})\)/;

/**
 * Whether a message that is no DSN still reads as a bounce: from a mail system (MAILER-DAEMON, postmaster, "Mail
 * Delivery Subsystem") or titled like one. Anything else (an out-of-office reply, a person's answer) is not read for
 * bounce wording at all: an auto-reply that says "could not be delivered" about something else changes nothing.
 */
export function looksLikeBounce(headers: readonly HeaderField[]): boolean {
  const from = headerValues(headers, 'from')[0] ?? '';
  const subject = headerValues(headers, 'subject')[0] ?? '';
  return (
    /\b(mailer-daemon|postmaster|mail delivery (subsystem|system)|mail administrator)\b/i.test(from) ||
    /\b(undeliver(able|ed)|delivery (status notification|failure|failed|report|problem)|returned mail|failure notice|mail delivery failed|non-?delivery|delayed mail)\b/i.test(subject)
  );
}

/** The first rule `text` matches, with the status of a reply it quotes (which must agree with the rule's action). */
export function readTextBounce(text: string): TextBounce | undefined {
  for (const rule of BOUNCE_PATTERNS) {
    const m = rule.pattern.exec(text);
    if (!m) continue;
    const reply = QUOTED_REPLY.exec(text);
    const qmail = QMAIL_STATUS.exec(text);
    const quoted = reply?.[2] ?? qmail?.[1];
    const agrees = quoted !== undefined && quoted[0] === rule.status[0];
    const lineOf = (at: number) => text.slice(text.lastIndexOf('\n', at) + 1, (text.indexOf('\n', at) + 1 || text.length + 1) - 1).trim();
    return {
      action: rule.action,
      status: agrees ? quoted : rule.status,
      rule: rule.name,
      diagnostic: (reply && agrees ? reply[0] : lineOf(m.index)).slice(0, 500),
    };
  }
  return undefined;
}
