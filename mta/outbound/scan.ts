// Owns scanning one outbound message: built-in rules, rspamd and clamd in parallel, graded and decided into the
// verdict record the send recipe and submission act on and store.
import type { ScanPolicy } from '../../config/keys.js';
import { scanOutboundContent } from '../../filters/outbound-rules.js';
import {
  decideOutboundAction, gradeSpam, gradeVirus, type OutboundScanVerdict,
} from '../../filters/outbound-verdicts.js';
import type { MessageContent } from '../message-content.js';
import type { ClamdClient } from '../scanners/clamd-client.js';
import type { RspamdClient } from '../scanners/rspamd-client.js';
import type { FromAuthChecker } from './from-auth.js';

export interface OutboundScanDeps {
  /** Present when `filters.rspamd.url` is set. */
  rspamd?: RspamdClient | undefined;
  /** Present when `filters.clamd.address` is set. */
  clamd?: ClamdClient | undefined;
  fromAuth: FromAuthChecker;
  /** `filters.spam_threshold` (SUSPECT) and `filters.confirmed_threshold` (CONFIRMED). */
  threshold: number;
  confirmedThreshold: number;
  /** `filters.on_scanner_error`. */
  onScannerError: 'tempfail' | 'accept';
}

/** One composed (and signed) message as it will be sent, with what the scanners are told about it. */
export interface ScanRequest {
  /** The message: rspamd and clamd read it whole as a stream; the built-in rules read its sample. */
  content: MessageContent;
  policy: ScanPolicy;
  senderId: string;
  /** The authenticated user or From address (rspamd's `User`). */
  user: string;
  fromDomain: string;
  /** d= of our DKIM signature, or null. */
  dkimDomain: string | null;
  mailFrom: string;
  rcptTo: string[];
  /** The submitting client (REST caller or SMTP client) and its name (our host name for REST). */
  clientIp: string;
  helo: string;
  queueId: string;
}

/**
 * Scans one message under `req.policy`: `off` grades nothing (UNKNOWN, `not-scanned`); otherwise the built-in rules
 * (with the From domain's authentication state) run while rspamd and clamd, when configured, are asked in parallel.
 * Returns the verdict record with the policy decision (filters/outbound-verdicts.ts); never throws for a scanner:
 * a scanner that fails is graded as failed and decided by `filters.on_scanner_error`.
 */
export async function scanOutbound(deps: OutboundScanDeps, req: ScanRequest): Promise<OutboundScanVerdict> {
  if (req.policy === 'off') {
    return {
      step: 'outbound-scan',
      policy: 'off',
      senderId: req.senderId,
      spam: { disposition: 'UNKNOWN', reason: 'not-scanned', score: 0, threshold: deps.threshold, confirmedThreshold: deps.confirmedThreshold, rules: [] },
      virus: { disposition: 'UNKNOWN', reason: 'not-scanned' },
      action: 'send',
      reason: 'policy-off',
    };
  }
  const [rspamd, clamd, fromAuth] = await Promise.all([
    deps.rspamd?.check({
      message: req.content,
      clientIp: req.clientIp,
      helo: req.helo,
      mailFrom: req.mailFrom,
      rcptTo: req.rcptTo,
      queueId: req.queueId,
      user: req.user,
    }),
    deps.clamd?.scan(req.content),
    deps.fromAuth({ fromDomain: req.fromDomain, dkimDomain: req.dkimDomain, mailFrom: req.mailFrom }),
  ]);
  const found = scanOutboundContent(req.content.sample, fromAuth);
  const spam = gradeSpam({
    builtin: found.spam,
    rspamd,
    threshold: deps.threshold,
    confirmedThreshold: deps.confirmedThreshold,
    bulk: found.bulk,
  });
  const virus = gradeVirus({ eicar: found.eicar, clamd });
  const decided = decideOutboundAction({ policy: req.policy, spam, virus, onScannerError: deps.onScannerError });
  return { step: 'outbound-scan', policy: req.policy, senderId: req.senderId, spam, virus, action: decided.action, reason: decided.reason };
}
