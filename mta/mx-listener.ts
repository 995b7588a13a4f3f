// Owns the MX listener's SMTP session policy: which recipients are accepted (only served domains; no open relay).
import type { SMTPServerOptions } from 'smtp-server';
import type { TlsPair } from './tls.js';
import { relayDenied, SmtpReply, toSmtpReply } from './smtp-reply.js';

export interface MxPolicy {
  hostname: string;
  tls: TlsPair;
  /** True when `domain` (lower-case A-label) is a provisioned domain or alias served here. */
  isServedDomain: (domain: string) => boolean;
}

/** Lower-cased domain part of an address, without a trailing dot; '' when there is none. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? '' : address.slice(at + 1).toLowerCase().replace(/\.$/, '');
}

/**
 * smtp-server options for the MX: STARTTLS offered, no AUTH, and RCPT refused with 550 5.7.1 unless the
 * recipient's domain is served here — decided before any filter runs (ARCHITECTURE invariant 4).
 */
export function mxOptions(policy: MxPolicy): SMTPServerOptions {
  return {
    name: policy.hostname,
    banner: 'Sluice ESMTP',
    key: policy.tls.key,
    cert: policy.tls.cert,
    disabledCommands: ['AUTH'],
    authOptional: true,
    onRcptTo(address, _session, callback) {
      try {
        const rcpt = address.address;
        // Percent hacks, bang paths and quoted local parts never change the routing domain: only the text after
        // the last "@" names the domain, and it must be served here.
        if (!policy.isServedDomain(domainOf(rcpt)) || /[%!]/.test(rcpt.slice(0, rcpt.lastIndexOf('@')))) {
          return callback(relayDenied(rcpt));
        }
        callback(new SmtpReply(451, '4.3.2', 'Inbound relay is not available yet'));
      } catch (err) {
        callback(toSmtpReply(err));
      }
    },
  };
}
