// Owns `sluice log`: the operator's search of the SMTP log (outbound, one account and its sub-accounts) and, with
// --inbound, of the inbound log (every account, or one; mail refused before any served domain too), newest first.
import { normaliseDomain } from '../filters/inbound-names.js';
import { INBOUND_VERDICTS, type InboundLogStore, type InboundVerdict } from '../storage/ports/inbound-log.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { SmtpLogStore } from '../storage/ports/smtp-log.js';
import { headed, iso, requireAccount, UsageError, type CliIo, type Opts } from './cli-common.js';
import { when } from './cli-engagement.js';

/** Without --start and --end the search covers this many days up to now, as POST /outbound/v1/search does. */
const DEFAULT_DAYS = 3;

/** The options of `sluice log` beside the common ones. */
export type LogOpts = Opts & { inbound?: boolean; rcpt?: string; subject?: string; client?: string; 'message-id'?: string; verdict?: string };

/** The searched window: --start (inclusive) to --end (exclusive), else the last DEFAULT_DAYS days. */
function window(opts: LogOpts, now: number): { since: number; until: number } {
  const since = when('start', opts.start) ?? now - DEFAULT_DAYS * 86_400_000;
  const until = when('end', opts.end) ?? now + 1;
  if (since >= until) throw new UsageError('--start must be before --end');
  return { since, until };
}

export async function logCommand(
  stores: { accounts: AccountStore; smtpLog: SmtpLogStore; inboundLog: InboundLogStore },
  opts: LogOpts,
  io: CliIo,
  now: () => number,
): Promise<number> {
  const limit = opts.limit === undefined ? 100 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 9999) throw new UsageError('--limit must be an integer from 1 to 9999');
  const range = window(opts, now());
  const text = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
  const page = { startAt: 0, count: limit };
  if (opts.inbound) {
    if (opts.verdict !== undefined && !INBOUND_VERDICTS.includes(opts.verdict as InboundVerdict)) {
      throw new UsageError(`--verdict must be one of ${INBOUND_VERDICTS.join(', ')}`);
    }
    const domain = opts.domain === undefined ? undefined : normaliseDomain(opts.domain);
    if (opts.domain !== undefined && domain === undefined) throw new UsageError(`--domain: "${opts.domain}" is not a domain name`);
    const accountId = opts.account === undefined ? null : (await requireAccount(stores.accounts, opts.account)).id;
    const rows = await stores.inboundLog.search({ accountId }, {
      sender: text(opts.sender), rcpt: text(opts.rcpt), subject: text(opts.subject), clientIp: text(opts.client),
      messageId: text(opts['message-id'])?.replace(/^<|>$/g, ''), verdict: opts.verdict as InboundVerdict | undefined, domain, ...range,
    }, page);
    if (opts.json) io.stdout(JSON.stringify(rows) + '\n');
    else {
      io.stdout(headed(['TIME', 'VERDICT', 'REASON', 'SENDER -> RECIPIENT', 'CLIENT', 'QUEUE ID', 'SUBJECT', 'REPLY', 'THEN'], rows.map((r) => {
        const after = r.relay ? `\t${r.relay.state} ${r.relay.code ?? ''} ${r.relay.response ?? ''}`.trimEnd() : r.quarantine_id !== null ? `\tquarantine ${r.quarantine_id}${r.released_at ? ' released' : ''}` : '';
        return `${iso(r.created_at)}\t${r.verdict}\t${r.reason}\t<${r.sender}> -> <${r.rcpt}>\t[${r.client_ip}]\t${r.queue_id ?? '-'}\t${r.subject ?? ''}\t${r.reply}${after}\n`;
      }).join('')) || 'no inbound log rows match\n');
    }
    return 0;
  }
  // The outbound log is searched per account (the API's tenancy): the account and its sub-accounts.
  const account = await requireAccount(stores.accounts, opts.account);
  const ids = [account.id, ...(account.parent_id === null ? (await stores.accounts.listSubAccounts(account.id, 1000, 0)).map((a) => a.id) : [])];
  const rows = await stores.smtpLog.search(ids, {
    sender: text(opts.sender), rcpt: text(opts.rcpt), subject: text(opts.subject), messageId: text(opts['message-id']), ...range,
  }, page);
  if (opts.json) io.stdout(JSON.stringify(rows) + '\n');
  else {
    io.stdout(headed(['TIME', 'STATE', 'CODE', 'SENDER -> RECIPIENT', 'MESSAGE-ID', 'SUBJECT', 'REPLY'], rows.map((r) =>
      `${iso(r.created_at)}\t${r.delivered ? 'delivered' : 'undelivered'}\t${r.rspcode ?? '-'}\t<${r.sender}> -> <${r.rcpt}>\t${r.message_id}\t${r.subject ?? ''}\t${r.rspmsg ?? ''}\n`,
    ).join('')) || 'no log rows match\n');
  }
  return 0;
}
