// Owns the keys that bound a REST send (issue 31): recipients per request and send requests per second per account;
// and how long a send's Idempotency-Key keeps its answer (issue 36).
import { key } from './key-def.js';
import { integer } from './values.js';

/**
 * `send.max_recipients` and `send.rate_per_second`. MailChannels documents 1,000 personalizations
 * and 1,000 addresses per to/cc/bcc list (OAS-E maxItems) but no total, which lets one request name three million
 * recipients; SendGrid's v3 mail/send, whose body MailChannels' follows, documents a total of 1,000 (to + cc + bcc,
 * every personalization together), which keeps each of MailChannels' shapes possible (1,000 personalizations of one
 * recipient, or one personalization of 1,000). The request rate is /inbound/v1's (100 per second per customer).
 */
export const SEND_KEYS = {
  maxRecipients: key({
    doc: 'Recipients (to, cc and bcc of every personalization together) one POST /tx/v1/send or /tx/v1/send-async may name; more get 400 and nothing is queued. 1,000 is SendGrid\'s documented total; MailChannels documents 1,000 per list and 1,000 personalizations, no total.',
    defaultText: '1000',
    default: () => 1000,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  ratePerSecond: key({
    doc: 'Send requests (POST /tx/v1/send, dry runs included, and /tx/v1/send-async) each account may make per second, with a burst of as many; past it, 429 with Retry-After. 0 turns the limit off. Counted per node, in memory (a request budget protects the node that serves it): with several nodes on PostgreSQL an account may make this many on each, so set the cluster\'s rate divided by the nodes.',
    defaultText: '100',
    default: () => 100,
    parse: integer(0, 1_000_000, 'requests per second'),
  }),
};

/** `api.idempotency_ttl_hours` (control-api/idempotency.ts). */
export const API_KEYS = {
  idempotencyTtlHours: key({
    doc: 'Hours an Idempotency-Key of POST /tx/v1/send or /tx/v1/send-async keeps its answer: a retry with the key within them gets the first answer again (Idempotent-Replayed: true) and nothing is queued again; past them the key is free and retention removes it. Stripe keeps keys 24 hours.',
    defaultText: '24',
    default: () => 24,
    parse: integer(1, 24 * 365, 'hours'),
  }),
};
