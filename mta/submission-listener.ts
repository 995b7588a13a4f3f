// Owns the submission listener's session policy: AUTH (PLAIN/LOGIN) only after TLS, against SMTP passwords.
import type { SMTPServerOptions } from 'smtp-server';
import type { AccountRow } from '../storage/accounts.js';
import { SmtpReply, toSmtpReply } from './smtp-reply.js';
import type { TlsPair } from './tls.js';

export interface SubmissionPolicy {
  hostname: string;
  tls: TlsPair;
  /** The live account a handle + SMTP password authenticates, or undefined. */
  authenticate: (username: string, password: string) => AccountRow | undefined;
  /** Implicit TLS (port 465 style) rather than STARTTLS. */
  secure?: boolean;
}

/**
 * smtp-server options for submission. allowInsecureAuth=false keeps AUTH hidden and refused until STARTTLS
 * (RFC 8314 §3; reliability A10); authOptional=false answers 530 to MAIL before AUTH.
 */
export function submissionOptions(policy: SubmissionPolicy): SMTPServerOptions {
  return {
    name: policy.hostname,
    banner: 'Sluice ESMTP submission',
    secure: policy.secure ?? false,
    key: policy.tls.key,
    cert: policy.tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: false,
    authOptional: false,
    onAuth(auth, _session, callback) {
      try {
        const account = auth.username && auth.password ? policy.authenticate(auth.username, auth.password) : undefined;
        // RFC 4954 §6: 535 5.7.8 for bad credentials; a suspended sub-account is refused the same way.
        if (!account || account.enabled !== 1) return callback(new SmtpReply(535, '5.7.8', 'Authentication credentials invalid'));
        callback(null, { user: account.handle });
      } catch (err) {
        callback(toSmtpReply(err));
      }
    },
    onMailFrom(_address, _session, callback) {
      callback(new SmtpReply(451, '4.3.2', 'Submission is not available yet'));
    },
  };
}
