// Owns the keys that bound an SMTP session on both listeners (junk commands, a deadline) and the pause after a failed
// submission AUTH: what keeps a client from holding a session forever or guessing passwords quickly.
import { key } from './key-def.js';
import { integer } from './values.js';

/** `smtp.junk_command_limit` and `smtp.session_deadline_minutes` (mta/smtp/smtp-server-seam.ts SessionLimits). */
export const SMTP_SESSION_KEYS = {
  junkCommandLimit: key({
    doc: 'NOOP, RSET, VRFY and HELP commands a session may send since its last message, on both listeners; the next gets 421 4.7.0 and the connection is closed (Postfix smtpd_junk_command_limit).',
    defaultText: '100',
    default: () => 100,
    parse: integer(1, 100_000, 'a count'),
  }),
  sessionDeadlineMinutes: key({
    doc: 'Longest SMTP session on both listeners, in minutes: the first command after it gets 421 4.4.2 and the connection is closed (a message being transferred is never cut; idle sessions end after 300 s anyway); 0: no deadline.',
    defaultText: '30',
    default: () => 30,
    parse: integer(0, 1440, 'minutes'),
  }),
};

/** `smtp.submission.auth_failure_delay_ms` (mta/smtp/submission-listener.ts). */
export const SUBMISSION_AUTH_KEYS = {
  authFailureDelayMs: key({
    doc: 'Pause before each 535 answer to a failed AUTH, slowing password guessing on one connection (Postfix smtpd_error_sleep_time); 0 answers at once.',
    defaultText: '1000',
    default: () => 1000,
    parse: integer(0, 30_000, 'milliseconds'),
  }),
};
