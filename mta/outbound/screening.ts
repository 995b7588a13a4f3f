// Owns the screening step REST sends and SMTP submission share: refuse a blocked sender identity, scan each message,
// turn verdicts into refusals or a tempfail, and after the commit count what was scanned toward blocks and alerts.
import type { Config } from '../../config/load.js';
import type { OutboundScanVerdict } from '../../filters/outbound-verdicts.js';
import type { DnsResolver } from '../delivery/dns-resolver.js';
import type { Metrics } from '../metrics.js';
import { createClamdClient } from '../scanners/clamd-client.js';
import type { RspamdClient } from '../scanners/rspamd-client.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { SenderBlockRow } from '../../storage/ports/sender-abuse.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';
import { createTurns, mapInTurns } from '../event-loop-turns.js';
import { createFromAuthChecker } from './from-auth.js';
import { scanOutbound, type OutboundScanDeps, type ScanRequest } from './scan.js';
import type { SenderAbuse } from './sender-abuse.js';

/** What a refusal records on each log row of the message (rspcode, status and text) and answers the client. */
export type Refusal = NonNullable<AcceptedOutbound['refusal']>;

export interface ScreeningDeps {
  scanning: OutboundScanDeps;
  abuse: SenderAbuse;
  /** Counts every verdict's dispositions (sluice_outbound_scan_dispositions_total). */
  metrics?: Pick<Metrics, 'outboundScanDispositions'> | undefined;
}

/** The refusal of a message whose sender identity is blocked (RFC 3463 5.7.1: delivery not authorized). */
export function blockRefusal(block: SenderBlockRow): Refusal {
  return {
    code: 550,
    status: '5.7.1',
    reason: `sender ${block.sender_id} is blocked for sending spam (${block.reason}); request delisting with POST /outbound/v1/remediation`,
  };
}

/** The refusal a verdict calls for, if any: `message refused: spam (CONFIRMED)` or `… virus (CONFIRMED: <signature>)`. */
export function contentRefusal(v: OutboundScanVerdict): Refusal | undefined {
  if (v.action !== 'refuse') return undefined;
  const what = v.reason === 'virus-confirmed' ? `virus (CONFIRMED${v.virus.signature ? `: ${v.virus.signature}` : ''})` : 'spam (CONFIRMED)';
  return { code: 550, status: '5.7.1', reason: `message refused: ${what}` };
}

/** The scan part of an accepted-message record: dispositions for the log rows, the verdict as stored JSON. */
export function scanRecord(v: OutboundScanVerdict): NonNullable<AcceptedOutbound['scan']> {
  return { spam: v.spam.disposition, virus: v.virus.disposition, verdicts: [v] };
}

/** The active block of the first blocked identity among `senderIds` of `account`, if any. */
export async function findBlock(deps: ScreeningDeps, account: AccountRow, senderIds: readonly string[]): Promise<SenderBlockRow | undefined> {
  for (const id of new Set(senderIds)) {
    const b = await deps.abuse.activeBlock(account.id, id);
    if (b) return b;
  }
  return undefined;
}

/**
 * Scans every message under the account's policy, in parallel. `tempfail` names the failed scanner when any
 * message must wait for it (`filters.on_scanner_error = tempfail`): then nothing of the request may be queued.
 */
export async function screenMessages(
  deps: ScreeningDeps,
  account: AccountRow,
  requests: Omit<ScanRequest, 'policy'>[],
): Promise<{ verdicts: OutboundScanVerdict[]; tempfail: string | undefined }> {
  const policy = await deps.abuse.policyOf(account);
  // The built-in rules parse each message's MIME without I/O: paced, so a thousand messages never hold the loop.
  const verdicts = await mapInTurns(requests, (r) => scanOutbound(deps.scanning, { ...r, policy }));
  // Every verdict is counted, whatever comes of the message (sent, refused, or tempfailed and sent again later).
  for (const v of verdicts) {
    deps.metrics?.outboundScanDispositions.inc({ scanner: 'spam', disposition: v.spam.disposition.toLowerCase() });
    deps.metrics?.outboundScanDispositions.inc({ scanner: 'virus', disposition: v.virus.disposition.toLowerCase() });
  }
  return { verdicts, tempfail: verdicts.find((v) => v.action === 'tempfail')?.reason };
}

/** After the commit: each scanned message's strikes, block and alerts (mta/outbound/sender-abuse.ts), in order. */
export async function afterCommit(
  deps: ScreeningDeps,
  scanned: { record: Pick<AcceptedOutbound, 'account' | 'messageId' | 'sendRequestId' | 'mailFrom' | 'upstream' | 'auth'>; verdict: OutboundScanVerdict }[],
): Promise<void> {
  const turn = createTurns();
  for (const { record: r, verdict } of scanned) {
    await turn();
    await deps.abuse.afterScan(
      { accountId: r.account.id, messageId: r.messageId, sendRequestId: r.sendRequestId, mailFrom: r.mailFrom, upstream: r.upstream, auth: r.auth },
      verdict,
    );
  }
}

/** Builds the screening dependencies from the configuration (composition root helper; one place for the wiring). */
export function createScreening(deps: {
  config: Pick<Config, 'filters' | 'outbound' | 'smtp'>;
  resolver: DnsResolver;
  rspamd: RspamdClient | undefined;
  abuse: SenderAbuse;
  metrics?: Pick<Metrics, 'outboundScanDispositions'>;
  now: () => number;
}): ScreeningDeps {
  const { filters } = deps.config;
  return {
    scanning: {
      rspamd: deps.rspamd,
      clamd: filters.clamd.address ? createClamdClient({ address: filters.clamd.address, timeoutMs: filters.clamd.timeoutMs }) : undefined,
      fromAuth: createFromAuthChecker({ resolver: deps.resolver, publicIp: deps.config.outbound.publicIp, hostname: deps.config.smtp.hostname, now: deps.now }),
      threshold: filters.spamThreshold,
      confirmedThreshold: filters.confirmedThreshold,
      onScannerError: filters.onScannerError,
    },
    abuse: deps.abuse,
    metrics: deps.metrics,
  };
}
