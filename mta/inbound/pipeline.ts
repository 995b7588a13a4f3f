// Owns the orchestration of inbound mail after DATA: the detection steps (lists, authentication, spam: filters/),
// then the policy step (./policy.ts), then the commit (quarantine rows, relays) and the one SMTP reply to DATA.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import { checkAuthentication, isForgedAuthResults, type AuthResolver } from '../../filters/inbound-auth.js';
import { decideListVerdict, type ListVerdict } from '../../filters/inbound-lists.js';
import { decideSpam, listStepVerdict, spamScanFailed, type StepVerdict } from '../../filters/inbound-verdicts.js';
import { headerValues, rewriteHeaders, splitMessage } from '../../filters/message-headers.js';
import { scoreMessage, SPAM_RULES, type SpamRule } from '../../filters/spam-rules.js';
import type { InboundDomainStore, ServedDomainRow } from '../../storage/ports/inbound-domains.js';
import type { InboundListStore } from '../../storage/ports/inbound-lists.js';
import type { QuarantineStore } from '../../storage/ports/quarantine.js';
import { domainOf } from '../smtp/address.js';
import type { MxMessage } from '../smtp/mx-listener.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';
import type { RspamdClient } from '../scanners/rspamd-client.js';
import type { Metrics } from '../metrics.js';
import { decidePolicy, refusalAtRcpt, refusalWithoutRecipients, type DomainRecipients } from './policy.js';

/** One message handed to the relay: it must resolve only once the message is durably committed (queue, fsync). */
export interface RelayMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** The provisioned domains (inbound_domains.id) the recipients belong to. */
  domainIds: number[];
  /** The id given in the 250 reply and the logs. */
  queueId: string;
  /** The message's Message-ID without <> (parsed once by the pipeline), or null when it has none. */
  messageId: string | null;
  /** The filtering verdict records, to store with the queued message. */
  verdicts: StepVerdict[];
}

/** Relays a message to its domains' downstream servers through the durable queue. Rejects when not committed. */
export type InboundRelay = (msg: RelayMessage) => Promise<void>;

/** The message as the MX listener has it at the end of DATA. */
export type InboundMessage = MxMessage;

export interface InboundPipelineDeps {
  /** `smtp.hostname`: the authserv-id of the Authentication-Results field we add. */
  hostname: string;
  domains: Pick<InboundDomainStore, 'findServedDomain'>;
  lists: Pick<InboundListStore, 'matchLists'>;
  quarantine: Pick<QuarantineStore, 'insert'>;
  /** mailauth's DNS function (`mailauthResolver(createDnsResolver(...))`), so no filter opens its own socket. */
  resolver: AuthResolver;
  relay: InboundRelay;
  /** Present when `filters.rspamd.url` is set. */
  rspamd?: RspamdClient | undefined;
  /** `filters.rspamd.failure`. */
  scannerFailure: 'tempfail' | 'accept-and-tag';
  /** `filters.spam_threshold`. */
  spamThreshold: number;
  /** `inbound.quarantine_days`. */
  quarantineDays: number;
  now: () => number;
  logger: Logger;
  /** Queue id generator (tests may fix it). */
  newQueueId?: () => string;
  /** Counts the policy step's actions per recipient. */
  metrics?: Metrics;
  /** The built-in rules (default SPAM_RULES). */
  rules?: readonly SpamRule[];
}

export interface InboundPipeline {
  /** Runs every step for one message and returns the reply to DATA. Never throws: errors answer 451 4.3.0. */
  handle(msg: InboundMessage): Promise<SmtpReply>;
  /**
   * The list decision for one recipient from what is known at RCPT (client IP, envelope sender), so the MX can
   * refuse a blocklisted sender there — the earliest stage that knows. A reply when refused, undefined otherwise.
   */
  checkRecipient(q: { mailFrom: string; clientIp: string; rcpt: string }): Promise<SmtpReply | undefined>;
}

/** The header that tags mail accepted while the spam scanner was down (`filters.rspamd.failure = accept-and-tag`). */
export const SCAN_FAILED_HEADER = 'X-Sluice-Spam-Scan: failed (scanner unavailable)';


/** The address as recipient-level lists store it: lower case, on the provisioned domain even when mailed via an alias. */
function listRecipient(rcpt: string, served: ServedDomainRow): string {
  const local = rcpt.slice(0, rcpt.lastIndexOf('@'));
  return `${local}@${served.domain}`.toLowerCase();
}

/** First value of a header field, cut to the RFC 5322 line limit, or null. */
function firstHeader(headers: ReturnType<typeof splitMessage>['headers'], name: string): string | null {
  const v = headerValues(headers, name)[0];
  return v === undefined ? null : v.slice(0, 998);
}

/**
 * Creates the inbound pipeline. Steps, each recorded as a verdict and logged:
 * 1. recipients are grouped by provisioned domain (an alias counts as its domain);
 * 2. lists, per recipient (precedence and `abusePolicyOverride`: filters/inbound-lists.ts): blocklisted client IP,
 *    sender address or sender domain → that recipient is refused; safelisted → the spam policy is skipped for it;
 * 3. authentication (SPF, DKIM, DMARC, ARC) once per message → one Authentication-Results field with our
 *    authserv-id, forged ones with our id removed (RFC 8601 §5);
 * 4. spam, once per message (filters/inbound-verdicts.ts `decideSpam`): built-in rules + rspamd's score when
 *    configured. rspamd down → `scannerFailure`: `tempfail` makes no decision (451 4.7.1), `accept-and-tag`
 *    continues on the built-in score with SCAN_FAILED_HEADER — never a silent pass;
 * 5. policy (./policy.ts `decidePolicy`): what the verdicts do per recipient domain — relay, flag, quarantine or
 *    block — and the one reply to DATA when nothing is kept.
 *
 * Then the commit: the domain's header name is removed from the incoming message for every domain (a sender can
 * neither pre-flag nor pre-clear it). Quarantine rows are committed first, then one relay call per distinct
 * rewritten message; 250 only after all committed. A failure in between answers 451 and the client's retry may
 * duplicate what was already committed (at-least-once, never zero).
 */
export function createInboundPipeline(deps: InboundPipelineDeps): InboundPipeline {
  const log = deps.logger.child({ component: 'inbound' });
  const newQueueId = deps.newQueueId ?? (() => crypto.randomBytes(6).toString('hex').toUpperCase());
  const rules = deps.rules ?? SPAM_RULES;

  async function listVerdict(served: ServedDomainRow, q: { mailFrom: string; clientIp: string; rcpt: string }): Promise<ListVerdict> {
    const matches = await deps.lists.matchLists({
      accountId: served.account_id,
      domain: served.domain,
      recipient: listRecipient(q.rcpt, served),
      clientIp: q.clientIp,
      ...(q.mailFrom ? { senderAddress: q.mailFrom } : {}),
    });
    return decideListVerdict(matches, { abusePolicyOverride: !!served.abuse_policy_override });
  }

  async function run(msg: InboundMessage, queueId: string, verdicts: StepVerdict[]): Promise<SmtpReply> {
    // 1. Recipients by provisioned domain, 2. lists.
    const groups = new Map<number, DomainRecipients>();
    for (const rcpt of msg.rcptTo) {
      const served = await deps.domains.findServedDomain(domainOf(rcpt));
      if (!served) {
        // The MX refuses these at RCPT; a domain deleted between RCPT and DATA lands here.
        verdicts.push({ step: 'recipient', rcpt, verdict: 'drop', reason: 'domain-not-served' });
        continue;
      }
      const lv = await listVerdict(served, { mailFrom: msg.mailFrom, clientIp: msg.clientIp, rcpt });
      verdicts.push(listStepVerdict(rcpt, lv));
      if (lv.action === 'block') continue;
      const g = groups.get(served.id) ?? { served, rcpt: [], safe: [] };
      g.rcpt.push(rcpt);
      if (lv.action === 'safelist') g.safe.push(rcpt);
      groups.set(served.id, g);
    }
    if (groups.size === 0) return refusalWithoutRecipients(verdicts);

    // 3. Authentication.
    const auth = await checkAuthentication(
      { raw: msg.raw, clientIp: msg.clientIp, helo: msg.helo, mailFrom: msg.mailFrom },
      { resolver: deps.resolver, authservId: deps.hostname },
    );
    verdicts.push(auth);

    // 4. Spam (not needed when every accepted recipient safelisted the sender; rspamd is only asked when needed).
    const split = splitMessage(msg.raw);
    const needed = [...groups.values()].some((g) => g.rcpt.length > g.safe.length);
    const builtin = scoreMessage({ auth: auth.results, headers: split.headers, body: msg.raw.subarray(split.bodyOffset) }, rules);
    const rspamd =
      needed && deps.rspamd
        ? await deps.rspamd.check({ raw: msg.raw, clientIp: msg.clientIp, helo: msg.helo, mailFrom: msg.mailFrom, rcptTo: msg.rcptTo, queueId })
        : undefined;
    const spam = decideSpam({ builtin, threshold: deps.spamThreshold, needed, rspamd, scannerFailure: deps.scannerFailure });
    verdicts.push(spam);

    // 5. Policy per domain.
    const policy = decidePolicy([...groups.values()], spam);
    verdicts.push(...policy.verdicts);
    for (const v of policy.verdicts) deps.metrics?.inboundVerdicts.inc({ action: v.verdict }, v.rcpt.length);
    if (policy.verdicts.length === 0 && policy.refusal) {
      // No decision at all (the spam scanner is down and `failure = tempfail`): every recipient waits for a retry.
      deps.metrics?.inboundVerdicts.inc({ action: 'tempfail' }, [...groups.values()].reduce((n, g) => n + g.rcpt.length, 0));
    }
    if (policy.refusal) return policy.refusal;

    // Commit: quarantine rows first, then each relay; 250 only after every commit.
    const prepend = [auth.header, ...(spamScanFailed(spam) ? [SCAN_FAILED_HEADER] : [])];
    const rewrite = (strip: string, flag?: string) =>
      rewriteHeaders(msg.raw, split, {
        prepend: flag ? [...prepend, flag] : prepend,
        keep: (h) => !isForgedAuthResults(h, deps.hostname) && h.key !== strip,
      });
    const now = deps.now();
    const from = firstHeader(split.headers, 'from');
    const subject = firstHeader(split.headers, 'subject');
    const messageIdHeader = firstHeader(split.headers, 'message-id');
    const messageId = messageIdHeader ? messageIdHeader.replace(/^<|>$/g, '') : null;
    for (const q of policy.quarantines) {
      await deps.quarantine.insert({
        accountId: q.served.account_id,
        domainId: q.served.id,
        domain: q.served.domain,
        queueId,
        mailFrom: msg.mailFrom,
        rcptTo: q.rcpt,
        clientIp: msg.clientIp,
        helo: msg.helo,
        fromHeader: from,
        subject,
        messageId,
        score: spam.score,
        reason: 'abuse-policy-quarantine',
        verdicts,
        raw: rewrite(q.strip),
        now,
        expiresAt: now + deps.quarantineDays * 86_400_000,
      });
    }
    for (const r of policy.relays) {
      const raw = rewrite(r.strip, r.flag);
      await deps.relay({ mailFrom: msg.mailFrom, rcptTo: r.rcpt, raw, domainIds: r.domainIds, queueId, messageId, verdicts });
    }
    return REPLY.queued(queueId);
  }

  return {
    async handle(msg) {
      const queueId = newQueueId();
      const verdicts: StepVerdict[] = [];
      let reply: SmtpReply;
      try {
        reply = await run(msg, queueId, verdicts);
      } catch (err) {
        // Unknown means temporary (ARCHITECTURE invariant 3): never 550, never a silent accept.
        log.error({ queueId, err: (err as Error).message }, 'inbound pipeline failed');
        reply = REPLY.tempfail;
      }
      log.info(
        { queueId, mailFrom: msg.mailFrom, rcptTo: msg.rcptTo, clientIp: msg.clientIp, tls: msg.tls, size: msg.raw.length, verdicts, reply: `${reply.code} ${reply.status}` },
        'inbound message',
      );
      return reply;
    },

    async checkRecipient(q) {
      const served = await deps.domains.findServedDomain(domainOf(q.rcpt));
      if (!served) return undefined;
      return refusalAtRcpt(await listVerdict(served, q));
    },
  };
}
