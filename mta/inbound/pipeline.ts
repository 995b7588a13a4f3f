// Owns the content stage of inbound mail after DATA: lists → authentication → spam score → abuse policy per domain,
// each step a verdict record, ending in relay, quarantine or refusal and the one SMTP reply to DATA.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import { checkAuthentication, isForgedAuthResults, type AuthResolver, type AuthVerdict } from '../../filters/inbound-auth.js';
import { decideListVerdict, effectiveAbusePolicy, type ListVerdict } from '../../filters/inbound-lists.js';
import { headerValues, rewriteHeaders, splitMessage } from '../../filters/message-headers.js';
import { scoreMessage, SPAM_RULES, type SpamRule } from '../../filters/spam-rules.js';
import { DEFAULT_DOMAIN_SETTINGS, type AbusePolicy, type InboundDomainStore, type ServedDomainRow } from '../../storage/inbound-domains.js';
import type { InboundListStore } from '../../storage/inbound-lists.js';
import type { QuarantineStore } from '../../storage/quarantine.js';
import { domainOf } from '../smtp/address.js';
import type { MxMessage } from '../smtp/mx-listener.js';
import { RSPAMD_SPAM_ACTIONS, type RspamdClient } from '../scanners/rspamd-client.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';

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

export interface ListStepVerdict {
  step: 'lists';
  rcpt: string;
  verdict: ListVerdict['action'];
  reason: string;
  level?: string;
  item?: string;
}

export interface SpamStepVerdict {
  step: 'spam';
  verdict: 'spam' | 'ham' | 'skipped';
  /** `spam-score`, `rspamd-action`, `below-threshold`, `all-safelisted`, or `filter-error:rspamd` (tagged). */
  reason: string;
  score: number;
  threshold: number;
  rules: { name: string; score: number }[];
  rspamd?: { action: string; score: number; symbols: string[] } | { error: string };
}

export interface PolicyStepVerdict {
  step: 'policy';
  domain: string;
  rcpt: string[];
  verdict: 'relay' | 'flag' | 'quarantine' | 'block';
  /** `abuse-policy-block|flag|quarantine`, `not-spam`, `safelisted` or `blocklisted`. */
  reason: string;
}

export interface OtherStepVerdict {
  step: 'recipient';
  rcpt: string;
  verdict: 'drop';
  reason: 'domain-not-served';
}

export type StepVerdict = ListStepVerdict | AuthVerdict | SpamStepVerdict | PolicyStepVerdict | OtherStepVerdict;

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
  checkRecipient(q: { mailFrom: string; clientIp: string; rcpt: string }): SmtpReply | undefined;
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
 * 4. spam score once per message: built-in rules + rspamd's score when configured; spam when the sum reaches
 *    `spamThreshold` or rspamd's action is reject / add header / rewrite subject. rspamd down → `scannerFailure`:
 *    `tempfail` answers 451 4.7.1, `accept-and-tag` continues on the built-in score with SCAN_FAILED_HEADER —
 *    never a silent pass;
 * 5. the abuse policy of each recipient domain for its non-safelisted recipients when spam: block → nothing kept;
 *    flag → relayed with `spamHeaderName: spamHeaderValue`; quarantine → stored, not relayed.
 *
 * Several domains in one message are decided per domain, but DATA has one reply: 550 5.7.1 when no recipient
 * keeps the message (every one blocklisted or blocked by policy); otherwise 250, and the recipients refused by
 * their own domain's block policy or lists simply get nothing (recorded in the verdicts; no bounce, so no
 * backscatter). The domain's header name is removed from the incoming message for every domain (a sender can
 * neither pre-flag nor pre-clear it). Quarantine rows are committed first, then one relay call per distinct
 * rewritten message; 250 only after all committed. A failure in between answers 451 and the client's retry may
 * duplicate what was already committed (at-least-once, never zero).
 */
export function createInboundPipeline(deps: InboundPipelineDeps): InboundPipeline {
  const log = deps.logger.child({ component: 'inbound' });
  const newQueueId = deps.newQueueId ?? (() => crypto.randomBytes(6).toString('hex').toUpperCase());
  const rules = deps.rules ?? SPAM_RULES;

  function listVerdict(served: ServedDomainRow, q: { mailFrom: string; clientIp: string; rcpt: string }): ListVerdict {
    const matches = deps.lists.matchLists({
      accountId: served.account_id,
      domain: served.domain,
      recipient: listRecipient(q.rcpt, served),
      clientIp: q.clientIp,
      ...(q.mailFrom ? { senderAddress: q.mailFrom } : {}),
    });
    return decideListVerdict(matches, { abusePolicyOverride: !!served.abuse_policy_override });
  }

  async function run(msg: InboundMessage, queueId: string, verdicts: StepVerdict[]): Promise<SmtpReply> {
    // 1. Recipients by provisioned domain.
    const groups = new Map<number, { served: ServedDomainRow; rcpt: string[]; safe: string[] }>();
    for (const rcpt of msg.rcptTo) {
      const served = deps.domains.findServedDomain(domainOf(rcpt));
      if (!served) {
        // The MX refuses these at RCPT; a domain deleted between RCPT and DATA lands here.
        verdicts.push({ step: 'recipient', rcpt, verdict: 'drop', reason: 'domain-not-served' });
        continue;
      }
      // 2. Lists.
      const lv = listVerdict(served, { mailFrom: msg.mailFrom, clientIp: msg.clientIp, rcpt });
      verdicts.push({
        step: 'lists',
        rcpt,
        verdict: lv.action,
        reason: lv.reason,
        ...(lv.action === 'none' ? {} : { level: lv.level, item: lv.item }),
      });
      if (lv.action === 'block') continue;
      const g = groups.get(served.id) ?? { served, rcpt: [], safe: [] };
      g.rcpt.push(rcpt);
      if (lv.action === 'safelist') g.safe.push(rcpt);
      groups.set(served.id, g);
    }
    if (groups.size === 0) {
      return verdicts.some((v) => v.step === 'lists' && v.verdict === 'block') ? REPLY.senderBlocklisted : REPLY.noRecipientServed;
    }

    // 3. Authentication.
    const auth = await checkAuthentication(
      { raw: msg.raw, clientIp: msg.clientIp, helo: msg.helo, mailFrom: msg.mailFrom },
      { resolver: deps.resolver, authservId: deps.hostname },
    );
    verdicts.push(auth);

    // 4. Spam score (skipped when every accepted recipient safelisted the sender).
    const split = splitMessage(msg.raw);
    const needsSpam = [...groups.values()].some((g) => g.rcpt.length > g.safe.length);
    let spam: SpamStepVerdict;
    let scanFailed = false;
    const builtin = scoreMessage({ auth: auth.results, headers: split.headers, body: msg.raw.subarray(split.bodyOffset) }, rules);
    if (!needsSpam) {
      spam = { step: 'spam', verdict: 'skipped', reason: 'all-safelisted', score: builtin.score, threshold: deps.spamThreshold, rules: builtin.rules };
    } else {
      let score = builtin.score;
      let rspamdSays = false;
      let rspamd: SpamStepVerdict['rspamd'];
      if (deps.rspamd) {
        const r = await deps.rspamd.check({
          raw: msg.raw,
          clientIp: msg.clientIp,
          helo: msg.helo,
          mailFrom: msg.mailFrom,
          rcptTo: msg.rcptTo,
          queueId,
        });
        if (r.ok) {
          rspamd = { action: r.action, score: r.score, symbols: r.symbols };
          score = Math.round((score + r.score) * 100) / 100;
          rspamdSays = RSPAMD_SPAM_ACTIONS.has(r.action);
        } else {
          rspamd = { error: r.error };
          if (deps.scannerFailure === 'tempfail') {
            verdicts.push({
              step: 'spam', verdict: 'skipped', reason: 'filter-error:rspamd', score, threshold: deps.spamThreshold, rules: builtin.rules, rspamd,
            });
            return REPLY.scannerDown;
          }
          scanFailed = true;
        }
      }
      const isSpam = score >= deps.spamThreshold || rspamdSays;
      spam = {
        step: 'spam',
        verdict: isSpam ? 'spam' : 'ham',
        reason: scanFailed ? 'filter-error:rspamd' : score >= deps.spamThreshold ? 'spam-score' : rspamdSays ? 'rspamd-action' : 'below-threshold',
        score,
        threshold: deps.spamThreshold,
        rules: builtin.rules,
        ...(rspamd ? { rspamd } : {}),
      };
    }
    verdicts.push(spam);

    // 5. Policy per domain.
    const prepend = [auth.header, ...(scanFailed ? [SCAN_FAILED_HEADER] : [])];
    const relays = new Map<string, { rcpt: string[]; domainIds: number[]; raw: Buffer }>();
    const quarantines: { served: ServedDomainRow; rcpt: string[] }[] = [];
    let blockedByPolicy = 0;
    const now = deps.now();
    for (const { served, rcpt, safe } of groups.values()) {
      const headerName = served.spam_header_name ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName;
      const headerValue = served.spam_header_value ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderValue;
      const policy: AbusePolicy = effectiveAbusePolicy({
        domain: { abusePolicy: served.abuse_policy, abusePolicyOverride: !!served.abuse_policy_override },
        fallback: DEFAULT_DOMAIN_SETTINGS.abusePolicy,
      });
      const addRelay = (to: string[], flagged: boolean) => {
        if (to.length === 0) return;
        const key = `${headerName.toLowerCase()}\n${flagged ? headerValue : ''}`;
        let r = relays.get(key);
        if (!r) {
          const stripName = headerName.toLowerCase();
          const raw = rewriteHeaders(msg.raw, split, {
            prepend: flagged ? [...prepend, `${headerName}: ${headerValue}`] : prepend,
            keep: (h) => !isForgedAuthResults(h, deps.hostname) && h.key !== stripName,
          });
          r = { rcpt: [], domainIds: [], raw };
          relays.set(key, r);
        }
        r.rcpt.push(...to);
        if (!r.domainIds.includes(served.id)) r.domainIds.push(served.id);
      };
      if (safe.length > 0) {
        verdicts.push({ step: 'policy', domain: served.domain, rcpt: safe, verdict: 'relay', reason: 'safelisted' });
        addRelay(safe, false);
      }
      const others = rcpt.filter((r) => !safe.includes(r));
      if (others.length === 0) continue;
      if (spam.verdict !== 'spam') {
        verdicts.push({ step: 'policy', domain: served.domain, rcpt: others, verdict: 'relay', reason: 'not-spam' });
        addRelay(others, false);
        continue;
      }
      verdicts.push({ step: 'policy', domain: served.domain, rcpt: others, verdict: policy, reason: `abuse-policy-${policy}` });
      if (policy === 'block') blockedByPolicy += others.length;
      else if (policy === 'flag') addRelay(others, true);
      else quarantines.push({ served, rcpt: others });
    }
    if (relays.size === 0 && quarantines.length === 0) {
      return blockedByPolicy > 0 ? REPLY.spam : REPLY.senderBlocklisted;
    }

    // Commit: quarantine rows first, then each relay; 250 only after every commit.
    const from = firstHeader(split.headers, 'from');
    const subject = firstHeader(split.headers, 'subject');
    const messageIdHeader = firstHeader(split.headers, 'message-id');
    const messageId = messageIdHeader ? messageIdHeader.replace(/^<|>$/g, '') : null;
    for (const q of quarantines) {
      const stripName = (q.served.spam_header_name ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName).toLowerCase();
      const raw = rewriteHeaders(msg.raw, split, {
        prepend,
        keep: (h) => !isForgedAuthResults(h, deps.hostname) && h.key !== stripName,
      });
      deps.quarantine.insert({
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
        raw,
        now,
        expiresAt: now + deps.quarantineDays * 86_400_000,
      });
    }
    for (const r of relays.values()) {
      await deps.relay({ mailFrom: msg.mailFrom, rcptTo: r.rcpt, raw: r.raw, domainIds: r.domainIds, queueId, messageId, verdicts });
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

    checkRecipient(q) {
      const served = deps.domains.findServedDomain(domainOf(q.rcpt));
      if (!served) return undefined;
      return listVerdict(served, q).action === 'block' ? REPLY.senderBlocklisted : undefined;
    },
  };
}
