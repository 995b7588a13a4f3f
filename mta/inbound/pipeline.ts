// Owns the orchestration of inbound mail after DATA: the detection steps (lists, authentication, spam: filters/),
// then the policy step (./policy.ts), then the commit (quarantine rows, relays) and the one SMTP reply to DATA.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import { spf } from 'mailauth/lib/spf/index.js';
import { autolearnClass } from '../../filters/autolearn.js';
import type { BayesClassifier } from '../../filters/bayes.js';
import { checkAuthentication, isForgedAuthResults, type AuthResolver } from '../../filters/inbound-auth.js';
import { listStepVerdict, type SpamStepVerdict, type StepVerdict } from '../../filters/inbound-verdicts.js';
import { headerValues, rewriteHeaderSection, splitMessage } from '../../filters/message-headers.js';
import type { ContentContext } from '../../filters/content-rules.js';
import { INBOUND_RULES } from '../../filters/inbound-rules.js';
import type { SpamRule } from '../../filters/spam-rules.js';
import type { InboundDomainStore, ServedDomainRow } from '../../storage/ports/inbound-domains.js';
import type { InboundListStore } from '../../storage/ports/inbound-lists.js';
import type { InboundRecipientStore } from '../../storage/ports/inbound-recipients.js';
import type { InboundLogStore, NewInboundLogRow } from '../../storage/ports/inbound-log.js';
import type { QuarantineStore } from '../../storage/ports/quarantine.js';
import { joinSource, type MessageSource } from '../../storage/message-source.js';
import { domainOf } from '../smtp/address.js';
import type { MxMessage } from '../smtp/mx-listener.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';
import { failureReply } from '../smtp/session.js';
import type { ClamdClient } from '../scanners/clamd-client.js';
import type { RspamdClient } from '../scanners/rspamd-client.js';
import type { Metrics } from '../metrics.js';
import type { CpuPool } from '../cpu-pool.js';
import { unsignedHeaderSection } from '../message-content.js';
import type { Autolearner } from './autolearn.js';
import { runContentStage } from './content-stage.js';
import { createMessageLog, rcptRow, type MessageFacts, type MessageLog, type RcptRefusal } from './inbound-log.js';
import type { DnsListChecker } from './dnsbl.js';
import type { Greylister } from './greylist.js';
import { createRcptChecks, type RcptQuery } from './rcpt-checks.js';
import { decideAccountPolicies, refusalWithoutRecipients, type DomainRecipients } from './policy.js';

/** One message handed to the relay: it must resolve only once the message is durably committed (queue, fsync). */
export interface RelayMessage {
  mailFrom: string;
  rcptTo: string[];
  /** The message as relayed (our header fields on top, the body as received), readable until the relay resolves. */
  message: MessageSource;
  /** The provisioned domains (inbound_domains.id) the recipients belong to. */
  domainIds: number[];
  /** The id given in the 250 reply and the logs. */
  queueId: string;
  /** The message's Message-ID without <> (parsed once by the pipeline), or null when it has none. */
  messageId: string | null;
  /** The filtering verdict records, to store with the queued message. */
  verdicts: StepVerdict[];
  /** Its recipients' inbound log rows, committed with it (absent: a quarantine release, logged when it was held). */
  log?: readonly NewInboundLogRow[];
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
  /** Recipients created with filter off (PUT /inbound/v1/users); absent: every recipient is filtered. */
  recipients?: Pick<InboundRecipientStore, 'unfiltered'> | undefined;
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
  /** The inbound log: rows of refused or deferred mail (accepted mail's ride its relay and quarantine units). */
  inboundLog?: Pick<InboundLogStore, 'record'> | undefined;
  /** Counts the policy step's actions per recipient. */
  metrics?: Metrics;
  /** The built-in rules (default INBOUND_RULES: header, authentication and content rules). */
  rules?: readonly SpamRule<ContentContext>[];
  /** The statistical classifier (filters/bayes.ts); absent: not asked. */
  bayes?: BayesClassifier | undefined;
  /** clamd, when `filters.clamd.address` is set: every message is scanned for viruses. */
  clamd?: ClamdClient | undefined;
  /** The DNS lists (`filters.dnsbl.*`); absent or empty: not asked. */
  dnsLists?: DnsListChecker | undefined;
  /** `filters.dnsbl.threshold` (default 3). */
  dnsblThreshold?: number;
  /** Greylisting (`inbound.greylist.*`), also used when rspamd answers `greylist`. */
  greylist?: Greylister | undefined;
  /** The CPU pool (../cpu-pool.ts) authenticating large messages off the event loop; absent: on it. */
  cpu?: Pick<CpuPool, 'authenticate'> | undefined;
  /** `filters.bayes.autolearn`: the classifier learns mail certain without it (`spamScore`: autolearn_spam_score). */
  autolearn?: { learner: Autolearner; spamScore: number } | undefined;
}

export interface InboundPipeline {
  /** Runs every step for one message and returns the reply to DATA. Never throws: errors answer 451 4.3.0. */
  handle(msg: InboundMessage): Promise<SmtpReply>;
  /**
   * The RCPT-time decision for one recipient (./rcpt-checks.ts: lists, DNS lists, greylisting), the earliest stage
   * that knows. A reply when refused or deferred, undefined otherwise.
   */
  checkRecipient(q: RcptQuery & { served?: ServedDomainRow }): Promise<SmtpReply | undefined>;
  /** Writes the inbound log row of a recipient the MX refused or deferred at RCPT; resolves once durable, never rejects. */
  rcptRefused(e: RcptRefusal): Promise<void>;
  /** The rows of a message refused at DATA before any policy (size, bare LF, MIME depth, a loop), one per recipient. */
  dataRefused(e: Omit<RcptRefusal, 'rcpt' | 'served'> & { rcpts: { rcpt: string; served?: ServedDomainRow | undefined }[] }): Promise<void>;
}

export { SCAN_FAILED_HEADER, VIRUS_SCAN_FAILED_HEADER } from './content-stage.js';

/**
 * The accepted recipients' accounts, in order, each with its domain groups; `needed` is false when every recipient
 * of that account safelisted the sender (no spam decision for it).
 */
function byAccount(groups: Iterable<DomainRecipients>): Map<number, { groups: DomainRecipients[]; needed: boolean }> {
  const accounts = new Map<number, { groups: DomainRecipients[]; needed: boolean }>();
  for (const g of groups) {
    const a = accounts.get(g.served.account_id) ?? { groups: [], needed: false };
    a.groups.push(g);
    a.needed ||= g.rcpt.length > g.safe.length;
    accounts.set(g.served.account_id, a);
  }
  return accounts;
}

/**
 * The verdicts stored with one account's copy when the recipients span accounts: the message's own (authentication,
 * DNS lists, virus), and of the per-recipient ones only this account's — another tenant's recipients, list entries
 * and classifier judgement are not its to read (ARCHITECTURE invariant 5).
 */
function copyVerdicts(all: readonly StepVerdict[], accountOf: ReadonlyMap<string, number>, accountId: number, spam: SpamStepVerdict): StepVerdict[] {
  return all.filter((v) => {
    if (v.step === 'lists' || v.step === 'recipient') return accountOf.get(v.rcpt) === accountId;
    if (v.step === 'policy') return v.rcpt.some((r) => accountOf.get(r) === accountId);
    if (v.step === 'spam') return v === spam;
    return true;
  });
}

/**
 * Marks the recipients of `groups` created with filter off (`DomainRecipients.unfiltered`). Asked only for an account
 * whose message is spam, the one case where it changes what happens, so clean mail costs no look-up.
 */
async function markUnfiltered(recipients: InboundPipelineDeps['recipients'], accountId: number, groups: DomainRecipients[]): Promise<void> {
  if (!recipients) return;
  // Recipients are stored as the lists store them: lower case, on the provisioned domain even when reached by alias.
  const canonical = new Map<string, string>();
  for (const g of groups) {
    for (const r of g.rcpt) if (!g.safe.includes(r)) canonical.set(`${r.slice(0, r.lastIndexOf('@'))}@${g.served.domain}`.toLowerCase(), r);
  }
  const off = new Set((await recipients.unfiltered(accountId, [...canonical.keys()])).map((a) => canonical.get(a)));
  for (const g of groups) g.unfiltered = g.rcpt.filter((r) => off.has(r));
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
 * 4. content (./content-stage.ts), once per message: DNS list weights (client below the RCPT threshold, sender,
 *    From and link domains), built-in rules, rspamd (its action by its own thresholds), clamd; the classifier once
 *    per recipient account, with that account's model (the global one where it has none), so each account gets a
 *    spam verdict of its own. A scanner down → `scannerFailure`: `tempfail` makes no decision (451 4.7.1),
 *    `accept-and-tag` continues without it and tags the message (SCAN_FAILED_HEADER, VIRUS_SCAN_FAILED_HEADER) —
 *    never a silent pass;
 * 5. policy (./policy.ts `decideAccountPolicies`): what each account's verdicts do per recipient domain — relay,
 *    flag, quarantine or block; a virus is quarantined or refused; spam for a recipient created with filter off is
 *    relayed as it came (`recipient-unfiltered`) — and the one reply to DATA (a mixed outcome across accounts is
 *    accepted and the refusing account's recipients get nothing);
 * 6. autolearn (`filters.bayes.autolearn`): each account's model learns a verdict that was certain without it.
 *
 * Then the commit: the domain's header name is removed from the incoming message for every domain (a sender can
 * neither pre-flag nor pre-clear it). Quarantine rows are committed first, then one relay call per distinct
 * rewritten message of each account (never shared across accounts: each stores its own verdicts); 250 only after
 * all committed. A failure in between answers 451 and the client's retry may duplicate what was already committed
 * (at-least-once, never zero).
 */
export function createInboundPipeline(deps: InboundPipelineDeps): InboundPipeline {
  const log = deps.logger.child({ component: 'inbound' });
  const newQueueId = deps.newQueueId ?? (() => crypto.randomBytes(6).toString('hex').toUpperCase());
  const rules = deps.rules ?? INBOUND_RULES;

  const rcptChecks = createRcptChecks({
    domains: deps.domains,
    lists: deps.lists,
    recipients: deps.recipients,
    dnsLists: deps.dnsLists,
    dnsblThreshold: deps.dnsblThreshold ?? 3,
    greylist: deps.greylist,
    spfPass: async (q) => {
      if (!q.mailFrom) return false;
      const r = await spf({ sender: q.mailFrom, ip: q.clientIp, mta: deps.hostname, resolver: deps.resolver }).catch(() => undefined);
      return r?.status.result === 'pass';
    },
    logger: deps.logger,
  });

  /** Writes rows of mail not taken in; a failure is logged, never the message's (its reply stands). */
  async function record(rows: readonly NewInboundLogRow[]): Promise<void> {
    if (!deps.inboundLog || rows.length === 0) return;
    await deps.inboundLog.record(rows).catch((err: unknown) => log.warn({ err: (err as Error).message, rows: rows.length }, 'inbound log rows not written'));
  }

  async function run(msg: InboundMessage, queueId: string, verdicts: StepVerdict[], facts: MessageFacts, mlog: MessageLog): Promise<SmtpReply> {
    // The header section once: the log keeps subject and Message-ID of refused mail too.
    const sample = msg.content.sample;
    const split = splitMessage(sample);
    facts.subject = firstHeader(split.headers, 'subject');
    const messageIdHeader = firstHeader(split.headers, 'message-id');
    facts.messageId = messageIdHeader ? messageIdHeader.replace(/^<|>$/g, '') : null;
    // 1. Recipients by provisioned domain, 2. lists.
    const groups = new Map<number, DomainRecipients>();
    const accountOf = new Map<string, number>();
    for (const rcpt of msg.rcptTo) {
      const served = await deps.domains.findServedDomain(domainOf(rcpt));
      if (!served) {
        // The MX refuses these at RCPT; a domain deleted between RCPT and DATA lands here.
        verdicts.push({ step: 'recipient', rcpt, verdict: 'drop', reason: 'domain-not-served' });
        continue;
      }
      accountOf.set(rcpt, served.account_id);
      facts.served.set(rcpt, served);
      const lv = await rcptChecks.listVerdict(served, { mailFrom: msg.mailFrom, clientIp: msg.clientIp, rcpt });
      verdicts.push(listStepVerdict(rcpt, lv));
      if (lv.action === 'block') continue;
      const g = groups.get(served.id) ?? { served, rcpt: [], safe: [] };
      g.rcpt.push(rcpt);
      if (lv.action === 'safelist') g.safe.push(rcpt);
      groups.set(served.id, g);
    }
    if (groups.size === 0) return refusalWithoutRecipients(verdicts);

    // 3. Authentication: an unsigned message's header section alone (no body hash to compute); a signed one's bytes
    // hashed as they stream from the scratch, or, a large message held whole in its sample, on a worker thread of the
    // CPU pool (the same verdict, the event loop free meanwhile).
    const authInput = { clientIp: msg.clientIp, helo: msg.helo, mailFrom: msg.mailFrom };
    const authDeps = { resolver: deps.resolver, authservId: deps.hostname };
    const headerOnly = unsignedHeaderSection(msg.content.sample);
    const auth = headerOnly
      ? await checkAuthentication({ ...authInput, raw: headerOnly }, authDeps)
      : deps.cpu
      ? await deps.cpu.authenticate({ ...authInput, whole: msg.content.complete ? msg.content.sample : undefined, open: () => msg.content.open() }, authDeps)
      : await checkAuthentication({ ...authInput, raw: msg.content.open() }, authDeps);
    verdicts.push(auth);

    // 4. Content, with one spam verdict per recipient account (not needed for an account whose every recipient
    // safelisted the sender). The rules and the classifier read the sample (header section and the start of the
    // body); rspamd and clamd the stream.
    const accounts = byAccount(groups.values());
    const stage = await runContentStage(
      { ...deps, rules, dnsblThreshold: deps.dnsblThreshold ?? 3 },
      { msg, queueId, auth, split, accounts: [...accounts].map(([id, a]) => ({ id, needed: a.needed })), clientListing: () => rcptChecks.clientListing(msg.clientIp) },
    );
    const spanning = accounts.size > 1;
    if (stage.dnsbl) verdicts.push(stage.dnsbl);
    for (const [id, spam] of stage.spam) verdicts.push(spanning ? Object.assign(spam, { account: id }) : spam);
    if (stage.virus) verdicts.push(stage.virus);
    if (stage.greylisted) return stage.greylisted;
    if (stage.virus?.verdict === 'skipped' && deps.scannerFailure === 'tempfail') return REPLY.virusScannerDown;

    // 5. Policy per account (its spam verdict), per domain (its abuse policy), and the one reply to DATA. A recipient
    // created with filter off gets spam as it came, unflagged: the policy is not applied to its mail.
    for (const [id, a] of accounts) {
      if (stage.spam.get(id)?.verdict === 'spam' && stage.virus?.verdict !== 'infected') await markUnfiltered(deps.recipients, id, a.groups);
    }
    const policy = decideAccountPolicies(
      [...accounts].map(([id, a]) => ({ accountId: id, groups: a.groups, spam: stage.spam.get(id)! })),
      stage.virus,
    );
    // A temporary refusal (no spam decision: the spam scanner is down under `failure = tempfail`) defers every
    // recipient, whatever another account decided: each waits for the retry.
    const deferred = !!policy.refusal && policy.refusal.code < 500;
    for (const d of policy.decisions) {
      verdicts.push(...d.verdicts);
      if (!deferred) for (const v of d.verdicts) deps.metrics?.inboundVerdicts.inc({ action: v.verdict }, v.rcpt.length);
    }
    if (deferred) deps.metrics?.inboundVerdicts.inc({ action: 'tempfail' }, [...groups.values()].reduce((n, g) => n + g.rcpt.length, 0));
    // The classifier learns, per account, what was certain without it (filters/autolearn.ts), refused mail too; not
    // a deferred attempt (its retry decides). Before the reply, so it counts for the next message; never fails one.
    if (deps.autolearn && !deferred) {
      for (const [accountId, spam] of stage.spam) {
        const cls = autolearnClass(spam, auth, stage.virus, deps.autolearn.spamScore);
        if (cls) await deps.autolearn.learner.learn(accountId, cls, sample);
      }
    }
    if (policy.refusal) return policy.refusal;

    // Commit: quarantine rows first, then each relay; 250 only after every commit. Each copy is a header section
    // of its own in front of the body as received, read from the scratch (never a second copy of the body). Each
    // account's copies are its own (never one relay across accounts): its header, its verdicts, its rows.
    const prepend = [auth.header, ...stage.tags];
    const rewrite = (strip: string, flag?: string): MessageSource => {
      const head = rewriteHeaderSection(sample, split, {
        prepend: flag ? [...prepend, flag] : prepend,
        keep: (h) => !isForgedAuthResults(h, deps.hostname) && h.key !== strip,
      });
      return joinSource([head, { source: msg.content, start: split.bodyOffset }]);
    };
    const now = deps.now();
    const from = firstHeader(split.headers, 'from');
    const { subject, messageId } = facts;
    const quarantines = policy.decisions.flatMap((d) => d.quarantines.map((q) => ({ accountId: d.accountId, q })));
    // Each unit writes its recipients' log rows (the first also those of recipients nothing commits): no commit of their own.
    const committed = [...quarantines.flatMap((x) => x.q.rcpt), ...policy.decisions.flatMap((d) => d.relays.flatMap((r) => r.rcpt))];
    const commit = <T>(rcpt: string[], unit: (rows: NewInboundLogRow[]) => Promise<T>) => mlog.commit(rcpt, committed, verdicts, REPLY.queued(queueId), unit);
    for (const { accountId, q } of quarantines) {
      const spam = stage.spam.get(accountId)!;
      // Streamed into storage (a large body is spooled), never held whole: no share of the buffering bound.
      await commit(q.rcpt, (rows) => deps.quarantine.insert({
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
        reason: stage.virus?.verdict === 'infected' ? 'virus-quarantine' : 'abuse-policy-quarantine',
        verdicts: spanning ? copyVerdicts(verdicts, accountOf, accountId, spam) : verdicts,
        body: rewrite(q.strip).open(),
        now,
        expiresAt: now + deps.quarantineDays * 86_400_000,
        log: rows,
      }));
    }
    for (const d of policy.decisions) {
      const copy = spanning ? copyVerdicts(verdicts, accountOf, d.accountId, stage.spam.get(d.accountId)!) : verdicts;
      for (const r of d.relays) {
        const message = rewrite(r.strip, r.flag);
        await commit(r.rcpt, (rows) => deps.relay({ mailFrom: msg.mailFrom, rcptTo: r.rcpt, message, domainIds: r.domainIds, queueId, messageId, verdicts: copy, log: rows }));
      }
      // The transaction's log line (handle) holds every verdict; each account's copy is logged on its own line too.
      if (spanning) log.info({ queueId, accountId: d.accountId, rcptTo: d.verdicts.flatMap((v) => v.rcpt), verdicts: copy }, 'inbound copy');
    }
    return REPLY.queued(queueId);
  }

  return {
    async handle(msg) {
      const queueId = newQueueId();
      const verdicts: StepVerdict[] = [];
      const facts: MessageFacts = { msg, queueId, subject: null, messageId: null, served: new Map() };
      const mlog = createMessageLog(facts, deps.now);
      let reply: SmtpReply;
      try {
        reply = await run(msg, queueId, verdicts, facts, mlog);
      } catch (err) {
        // Unknown means temporary (ARCHITECTURE invariant 3): never 550, never a silent accept. A full disk or the
        // in-memory bound answer 452 4.3.1 (failureReply).
        log.error({ queueId, err: (err as Error).message }, 'inbound pipeline failed');
        reply = failureReply(err);
      }
      // Before the reply: what no unit committed (a refusal, a deferral) is in the log once the client hears it.
      await record(mlog.rest(verdicts, reply));
      log.info(
        { queueId, mailFrom: msg.mailFrom, rcptTo: msg.rcptTo, clientIp: msg.clientIp, tls: msg.tls, size: msg.content.size, verdicts, reply: `${reply.code} ${reply.status}` },
        'inbound message',
      );
      return reply;
    },

    checkRecipient: (q) => rcptChecks.check(q),
    rcptRefused: (e) => record([rcptRow(e, deps.now())]),
    dataRefused: (e) => record(e.rcpts.map((r) => rcptRow({ ...e, rcpt: r.rcpt, served: r.served }, deps.now(), 'data'))),
  };
}
