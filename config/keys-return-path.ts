// Owns the keys of mail that comes back (issue 35): the VERP return path domain and the feedback-loop address.
import { key } from './key-def.js';
import { parseEmail, parseHostname } from './values.js';

/**
 * `outbound.return_path_domain`, `outbound.feedback_address`. Postal calls the first its return path domain
 * (`rp.<host>`), Postfix's VERP its `-V` sender; bounces that come back after the SMTP session (most large receivers
 * answer 250 and bounce later) reach Sluice only through it.
 */
export const RETURN_PATH_KEYS = {
  returnPathDomain: key({
    live: true,
    doc: 'Domain whose MX is this Sluice (e.g. bounces.example.net): outbound mail leaves with the envelope sender b+<token>@<domain>, the token a MAC naming the delivery, so a bounce that comes back later (an RFC 3464 DSN, or a common non-standard one) becomes a hard-bounced or soft-bounced event, a hard_bounce suppression and an updated log row; a forged or replayed one changes nothing. A REST send that names envelope_from keeps it. Publish an MX for the domain pointing here and an SPF record allowing outbound.public_ip. Empty: mail leaves with its own envelope sender.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => {
      const s = String(raw ?? '').trim();
      return s === '' ? undefined : parseHostname(s).toLowerCase();
    },
  }),
  feedbackAddress: key({
    live: true,
    doc: 'Address to register with mailbox providers\' feedback loops (Microsoft JMRP, Yahoo CFL): an RFC 5965 (ARF) report arriving here, or at the return path domain, about a message Sluice sent with a return path token becomes a complained event and a spam_complaint suppression. Its domain must be one whose MX is this Sluice; needs outbound.return_path_domain (reports are matched by the token).',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => parseEmail(raw)?.toLowerCase(),
  }),
};
