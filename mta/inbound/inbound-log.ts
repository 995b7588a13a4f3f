// Owns what the inbound log says of a message: one row per recipient, at RCPT (refused or deferred there) or at DATA
// (its verdict and reason from the policy step, the steps that concerned it, the reply), and which rows are written.
import { spamUndecided, type SpamStepVerdict, type StepVerdict } from '../../filters/inbound-verdicts.js';
import type { InboundVerdict, NewInboundLogRow } from '../../storage/ports/inbound-log.js';
import { domainOf } from '../smtp/address.js';
import type { MxMessage } from '../smtp/mx-listener.js';
import type { SmtpReply } from '../smtp/replies.js';

/** The reply as the log shows it: `550 5.7.1 text`. */
export const replyLine = (r: SmtpReply) => `${r.code} ${r.status} ${r.message}`;

/** A 4xx defers (the client retries: nothing was decided for good), anything else that is not 2xx refuses. */
const refusal = (r: SmtpReply): InboundVerdict => (r.code < 500 ? 'deferred' : 'refused');

/** The account and provisioned domain of a served recipient (ServedDomainRow's fields the log keeps). */
export interface ServedOf {
  account_id: number;
  domain: string;
}

/** One RCPT the MX refused or deferred (mta/smtp/mx-listener.ts `onRcptRefused`), before any message existed. */
export interface RcptRefusal {
  mailFrom: string;
  clientIp: string;
  helo: string;
  rcpt: string;
  reply: SmtpReply;
  /** The listener's reason (`relay-denied`, `list-refused`, `dnsbl-refused`, `greylisted`, `too-many-recipients`…). */
  reason: string;
  /** The recipient's served domain, when the refusal came after the relay decision. */
  served?: ServedOf | undefined;
}

/** The row of a refused or deferred RCPT, or (stage `data`) of a recipient of a message refused before any policy. */
export function rcptRow(e: RcptRefusal, now: number, stage: 'rcpt' | 'data' = 'rcpt'): NewInboundLogRow {
  const verdict = refusal(e.reply);
  return {
    account_id: e.served?.account_id ?? null,
    domain: e.served?.domain ?? (e.rcpt.includes('@') ? domainOf(e.rcpt) : ''),
    queue_id: null, stage, client_ip: e.clientIp, helo: e.helo, sender: e.mailFrom, rcpt: e.rcpt,
    subject: null, message_id: null, size: null, verdict, reason: e.reason, score: null, reply: replyLine(e.reply),
    steps: [{ step: stage, verdict, reason: e.reason, reply: replyLine(e.reply) }],
    created_at: now,
  };
}

const POLICY_VERDICT: Record<string, InboundVerdict> = { relay: 'relayed', flag: 'flagged', quarantine: 'quarantined', block: 'refused' };

/** Why nothing was decided for a deferred message: the scanner that failed or asked for a retry, else an error. */
function deferReason(steps: readonly StepVerdict[]): string {
  for (const v of steps) {
    if (v.step === 'spam' && spamUndecided(v)) return v.reason;
    if (v.step === 'virus' && v.verdict === 'skipped') return v.reason;
  }
  return 'temporary-failure';
}

/**
 * The steps that concerned `rcpt`: the message's own (authentication without its header field, which the results
 * repeat; DNS lists; virus), its list verdict and policy, and the spam verdict of its account (another account's
 * verdicts are not its to read: ARCHITECTURE invariant 5).
 */
function stepsOf(all: readonly StepVerdict[], rcpt: string, accountId: number | undefined): StepVerdict[] {
  return all.flatMap((v): StepVerdict[] => {
    if (v.step === 'lists' || v.step === 'recipient') return v.rcpt === rcpt ? [v] : [];
    if (v.step === 'policy') return v.rcpt.includes(rcpt) ? [v] : [];
    if (v.step === 'spam') return v.account === undefined || v.account === accountId ? [v] : [];
    if (v.step === 'auth') {
      const { header: _header, ...rest } = v;
      return [rest as StepVerdict];
    }
    return [v];
  });
}

/** The verdict and reason of one recipient: its policy step; a refusal before policy; a deferral (4xx) above all. */
function outcomeOf(steps: readonly StepVerdict[], reply: SmtpReply): { verdict: InboundVerdict; reason: string } {
  if (reply.code >= 400 && reply.code < 500) return { verdict: 'deferred', reason: deferReason(steps) };
  const policy = steps.find((v) => v.step === 'policy');
  if (policy) return { verdict: POLICY_VERDICT[policy.verdict] ?? 'refused', reason: policy.reason };
  const dropped = steps.find((v) => v.step === 'recipient' || (v.step === 'lists' && v.verdict === 'block'));
  if (dropped) return { verdict: 'refused', reason: dropped.reason };
  return { verdict: reply.code < 300 ? 'relayed' : refusal(reply), reason: reply.code < 300 ? 'accepted' : 'refused' };
}

/** What the log knows of a message at DATA; `served` is filled as the pipeline finds each recipient's domain. */
export interface MessageFacts {
  msg: Pick<MxMessage, 'mailFrom' | 'clientIp' | 'helo' | 'rcptTo'> & { content: { size: number } };
  queueId: string;
  subject: string | null;
  messageId: string | null;
  served: Map<string, ServedOf>;
}

/**
 * The rows of one message, each recipient's written once: `commit` hands the rows of some recipients to the unit that
 * commits them (a relay, a quarantine entry), the first unit also carrying the recipients no unit commits (refused
 * while others were accepted); `rest` gives the rows no unit committed (a refused or deferred message, or one whose
 * commit failed half-way), for `record`.
 */
export function createMessageLog(facts: MessageFacts, now: () => number) {
  const taken = new Set<string>();
  const rows = (rcpts: readonly string[], verdicts: readonly StepVerdict[], reply: SmtpReply): NewInboundLogRow[] =>
    rcpts.map((rcpt) => {
      const served = facts.served.get(rcpt);
      const steps = stepsOf(verdicts, rcpt, served?.account_id);
      const spam = steps.find((v): v is SpamStepVerdict => v.step === 'spam');
      return {
        account_id: served?.account_id ?? null, domain: served?.domain ?? domainOf(rcpt), queue_id: facts.queueId, stage: 'data',
        client_ip: facts.msg.clientIp, helo: facts.msg.helo, sender: facts.msg.mailFrom, rcpt, subject: facts.subject,
        message_id: facts.messageId, size: facts.msg.content.size, ...outcomeOf(steps, reply), score: spam?.score ?? null,
        reply: replyLine(reply), steps, created_at: now(),
      };
    });
  return {
    /**
     * Runs `unit` with the rows of `rcpts` (and, for the first unit, of every recipient not in `committed`, the ones
     * all units commit); they count as written once it resolves.
     */
    async commit<T>(rcpts: readonly string[], committed: readonly string[], verdicts: readonly StepVerdict[], reply: SmtpReply, unit: (rows: NewInboundLogRow[]) => Promise<T>): Promise<T> {
      const extra = taken.size === 0 ? facts.msg.rcptTo.filter((r) => !committed.includes(r)) : [];
      const out = rows([...rcpts, ...extra], verdicts, reply);
      const done = await unit(out);
      for (const r of out) taken.add(r.rcpt);
      return done;
    },
    /** Rows of the recipients no unit committed. */
    rest(verdicts: readonly StepVerdict[], reply: SmtpReply): NewInboundLogRow[] {
      return rows(facts.msg.rcptTo.filter((r) => !taken.has(r)), verdicts, reply);
    },
  };
}

export type MessageLog = ReturnType<typeof createMessageLog>;
