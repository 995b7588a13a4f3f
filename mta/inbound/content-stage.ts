// Owns the inbound content stage after authentication: the DNS lists' weight, the built-in rules, rspamd (asked as
// its milter protocol would) and clamd, each once per message, and the classifier once per recipient account, into
// one spam verdict per account and one virus verdict.
import { decideDnsbl, type DnsblStepVerdict } from '../../filters/dnsbl.js';
import type { BayesClassifier } from '../../filters/bayes.js';
import type { ContentContext } from '../../filters/content-rules.js';
import type { AuthVerdict } from '../../filters/inbound-auth.js';
import { decideSpam, type SpamStepVerdict, type VirusStepVerdict } from '../../filters/inbound-verdicts.js';
import { findUrls } from '../../filters/links.js';
import { headerValues, type SplitMessage } from '../../filters/message-headers.js';
import { mimeLeaves } from '../../filters/mime-parts.js';
import { scoreRules, type SpamRule } from '../../filters/spam-rules.js';
import { joinSource, type MessageSource } from '../../storage/message-source.js';
import type { ClamdClient } from '../scanners/clamd-client.js';
import type { RspamdClient } from '../scanners/rspamd-client.js';
import type { SmtpReply } from '../smtp/replies.js';
import type { DnsListChecker } from './dnsbl.js';
import type { Greylister } from './greylist.js';
import type { MxMessage as InboundMessage } from '../smtp/mx-listener.js';

export interface ContentStageDeps {
  /** `smtp.hostname`: our own Received field is recognised by it and kept from rspamd. */
  hostname: string;
  rules: readonly SpamRule<ContentContext>[];
  bayes?: BayesClassifier | undefined;
  rspamd?: RspamdClient | undefined;
  clamd?: ClamdClient | undefined;
  dnsLists?: DnsListChecker | undefined;
  dnsblThreshold: number;
  greylist?: Greylister | undefined;
  /** `filters.rspamd.failure`: what a scanner that does not answer (rspamd, clamd) makes of the message. */
  scannerFailure: 'tempfail' | 'accept-and-tag';
  spamThreshold: number;
}

export interface ContentInput {
  msg: InboundMessage;
  queueId: string;
  auth: AuthVerdict;
  /** The header section split from the message's sample (`msg.content.sample`). */
  split: SplitMessage;
  /**
   * The accounts of the accepted recipients, each judged with its own classifier model joined to the global one (an
   * account with none: the global model alone). `needed` is false when every recipient of that account safelisted
   * the sender: no spam decision for it (viruses are still scanned).
   */
  accounts: readonly { id: number; needed: boolean }[];
  /** The client's DNS list hits as RCPT saw them (cached by TTL, so asked again at no cost). */
  clientListing: () => Promise<{ hits: DnsblStepVerdict['hits']; errors: string[] }>;
}

export interface ContentOutcome {
  dnsbl?: DnsblStepVerdict;
  /** The spam verdict per account of `ContentInput.accounts` (account id → verdict), in that order. */
  spam: Map<number, SpamStepVerdict>;
  virus?: VirusStepVerdict;
  /** rspamd answered `greylist` and this attempt is deferred (450 4.7.1). */
  greylisted?: SmtpReply;
  /** Header fields to add (a scanner that did not answer, under `accept-and-tag`). */
  tags: string[];
}

/** The header that tags mail accepted while the spam scanner was down (`filters.rspamd.failure = accept-and-tag`). */
export const SCAN_FAILED_HEADER = 'X-Sluice-Spam-Scan: failed (scanner unavailable)';
/** The header that tags mail accepted while clamd was down (the same rule). */
export const VIRUS_SCAN_FAILED_HEADER = 'X-Sluice-Virus-Scan: failed (scanner unavailable)';

/**
 * The message as rspamd's milter and proxy see it: without the Received field our own MX put on top (its
 * `for <rcpt>` clause would make rspamd judge our trace as the sender's, e.g. FORGED_RECIPIENTS); the envelope and
 * the client travel in the protocol's headers instead.
 */
export function withoutOwnReceived(message: MessageSource, split: SplitMessage, hostname: string): MessageSource {
  const first = split.headers[0];
  if (!first || first.key !== 'received' || !new RegExp(`\\bby ${hostname.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').test(first.value)) return message;
  return joinSource([{ source: message, start: Buffer.byteLength(first.raw, 'latin1') }]);
}

/** The domains the domain lists are asked about: envelope sender, From, then the hosts of the message's links. */
function listedDomainsOf(msg: InboundMessage, content: ContentContext): string[] {
  const from = /@([^>\s]+)>?\s*$/.exec(headerValues(content.headers, 'from')[0] ?? '')?.[1];
  const envelope = msg.mailFrom.includes('@') ? msg.mailFrom.slice(msg.mailFrom.lastIndexOf('@') + 1) : undefined;
  return [envelope, from, ...content.urls.map((u) => u.url.hostname)].filter((d): d is string => !!d);
}

/** Runs the content stage for one message (never throws for a scanner's failure: that is a verdict too). */
export async function runContentStage(deps: ContentStageDeps, input: ContentInput): Promise<ContentOutcome> {
  const { msg, split } = input;
  // The rules, the MIME walk and the classifier judge the sample (the header section and the first
  // SAMPLE_BODY_BYTES of the body, as SpamAssassin reads a bounded start); rspamd and clamd read the whole stream.
  const sample = msg.content.sample;
  const leaves = mimeLeaves(sample, undefined, split);
  const content: ContentContext = { auth: input.auth.results, headers: split.headers, body: sample.subarray(split.bodyOffset), leaves, urls: findUrls(leaves) };
  const tags: string[] = [];

  let dnsbl: DnsblStepVerdict | undefined;
  if (deps.dnsLists?.enabled) {
    const [client, domains] = await Promise.all([input.clientListing(), deps.dnsLists.domains(listedDomainsOf(msg, content))]);
    dnsbl = decideDnsbl(client.hits, domains.hits, deps.dnsblThreshold, [...client.errors, ...domains.errors]);
  }

  const virus = deps.clamd ? await scanVirus(deps.clamd, msg.content) : undefined;
  if (virus?.verdict === 'skipped' && deps.scannerFailure === 'accept-and-tag') tags.push(VIRUS_SCAN_FAILED_HEADER);

  const builtin = scoreRules(content, deps.rules);
  const needed = input.accounts.some((a) => a.needed);
  const rspamd =
    needed && deps.rspamd
      ? await deps.rspamd.check({
          message: withoutOwnReceived(msg.content, split, deps.hostname),
          clientIp: msg.clientIp,
          helo: msg.helo,
          mailFrom: msg.mailFrom,
          rcptTo: msg.rcptTo,
          queueId: input.queueId,
          mtaName: deps.hostname,
        })
      : undefined;
  let greylisted: SmtpReply | undefined;
  if (rspamd?.ok && rspamd.action === 'greylist' && deps.greylist) {
    greylisted = await deps.greylist.rspamdAsked({ mailFrom: msg.mailFrom, clientIp: msg.clientIp, rcptTo: msg.rcptTo });
  }
  // Everything above judges the message; the classifier judges it for a reader. One extra recipient of another
  // tenant must not switch an account's trained model off (issue 31, finding 3), nor may one tenant's training
  // judge another's mail: each account gets its own classification and its own verdict (the message tokenized once
  // for all of them). The common case (one account) asks the classifier once, as before.
  const judged = input.accounts.filter((a) => a.needed).map((a) => a.id);
  const results = deps.bayes && judged.length > 0 ? await deps.bayes.classify(sample, judged) : [];
  const spam = new Map<number, SpamStepVerdict>();
  for (const account of input.accounts) {
    const bayes = account.needed ? results[judged.indexOf(account.id)] : undefined;
    const verdict = decideSpam({
      builtin, bayes, dnsbl, threshold: deps.spamThreshold, needed: account.needed, rspamd, scannerFailure: deps.scannerFailure,
      rspamdGreylistPassed: !!deps.greylist && !greylisted,
    });
    spam.set(account.id, verdict);
    if (verdict.reason === 'filter-error:rspamd' && verdict.verdict !== 'skipped' && !tags.includes(SCAN_FAILED_HEADER)) tags.push(SCAN_FAILED_HEADER);
  }
  return { ...(dnsbl ? { dnsbl } : {}), spam, ...(virus ? { virus } : {}), ...(greylisted ? { greylisted } : {}), tags };
}

/** clamd reads the whole message as INSTREAM chunks straight from the scratch (never assembled in memory). */
async function scanVirus(clamd: ClamdClient, message: MessageSource): Promise<VirusStepVerdict> {
  const r = await clamd.scan(message);
  if (!r.ok) return { step: 'virus', verdict: 'skipped', reason: 'filter-error:clamd', error: r.error };
  return r.infected ? { step: 'virus', verdict: 'infected', reason: 'clamd-found', signature: r.signature } : { step: 'virus', verdict: 'clean', reason: 'clamd-clean' };
}
