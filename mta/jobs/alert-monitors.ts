// Owns alert monitors at work: which monitors a condition of a sender identity fires (one alert per monitor, sender
// and interval), storing every alert, and delivering it — a signed webhook POST (label sig1) with retries, or an
// email through the durable queue.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import { ALERT_CONDITIONS, complaintRateExceeded, invalidRecipientsExceeded } from '../../filters/alert-conditions.js';
import { alertOriginator } from '../../filters/outbound-verdicts.js';
import type { LockdownVerdict } from '../../filters/lockdown.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { AlertRow, AlertStore, MonitorRow } from '../../storage/ports/alerts.js';
import { leaseOf, whileLeased } from '../../storage/ports/leases.js';
import type { MessageRow } from '../../storage/ports/queue.js';
import type { AlertTrigger } from '../outbound/sender-abuse.js';
import type { PermanentFailure, Queue } from '../queue/queue.js';
import type { TargetGuard } from '../delivery/target-guard.js';
import { domainOf } from '../smtp/address.js';
import { classifyStatus, decideRetryAt } from '../webhooks/dispatcher.js';
import { postJson } from '../webhooks/post-json.js';
import { createPassLoop } from '../webhooks/pass-loop.js';
import type { WebhookSigner } from '../webhooks/signing.js';
import { alertEmail } from './alert-email.js';

const HOUR_MS = 3_600_000;

export interface AlertMonitorsDeps {
  store: AlertStore;
  accounts: { findById: (id: number) => Promise<AccountRow | undefined> };
  signer: Pick<WebhookSigner, 'signAlert'>;
  /** The outbound-connection policy: a monitor's webhook_url is tenant-chosen, judged at every POST. */
  guard: Pick<TargetGuard, 'resolve'>;
  queue: Pick<Queue, 'accept'>;
  /** A sender identity's finished and recipient-class-bounced recipients since a time (the queue's). */
  senderOutcomes: (accountId: number, senderId: string, since: number) => Promise<{ finished: number; invalid: number }>;
  /** `abuse.invalid_recipient_rate`, `abuse.invalid_recipient_min`. */
  invalidRecipients: { rate: number; min: number };
  /** A sender identity's delivered recipients since a time, and how many of them complained since (the queue's). */
  senderComplaints: (accountId: number, senderId: string, since: number) => Promise<{ delivered: number; complaints: number }>;
  /** `abuse.complaint_rate`, `abuse.complaint_min`. */
  complaints: { rate: number; min: number };
  /** Domain Lockdown: an email alert goes only to a domain its monitor's account may send from. */
  lockdown: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  /** `smtp.hostname`: the From domain of alert emails. */
  hostname: string;
  now: () => number;
  logger: Logger;
  /** Per-POST deadline, default 10 s. */
  timeoutMs?: number;
  /** Poll interval of start(), default 1 s. */
  intervalMs?: number;
  /** How long a claim holds an alert (`queue.lease_seconds`), renewed while it is delivered; default the timeout + 1 min. */
  leaseMs?: number;
}

/** The alert notification of api.md §4.5 for one trigger; `handle` is the sending (sub-)account's. */
export function alertPayload(t: AlertTrigger, handle: string): Record<string, string> {
  return {
    condition_name: t.condition,
    condition_description: ALERT_CONDITIONS[t.condition],
    account_id: handle,
    timestamp: new Date(t.at).toISOString(),
    ...alertOriginator(t.senderId, t.message),
    sender_id: t.senderId,
    ip: t.message?.ip ?? '',
    transaction_id: t.message?.sendRequestId ?? '',
    envelope_sender: t.message?.envelopeSender ?? '',
    message_id: t.message?.messageId ?? '',
  };
}

/** RFC 3463: a recipient-class permanent failure (bad mailbox 5.1.x, mailbox disabled 5.2.1). */
const invalidRecipient = (f: PermanentFailure) => f.status !== null && (f.status.startsWith('5.1.') || f.status === '5.2.1');
/** A remote MX refused it for policy (RFC 3463 5.7.x, from a host that answered: not our own refusal). */
const policyRejection = (f: PermanentFailure) => f.host !== null && f.status !== null && f.status.startsWith('5.7.');

/** The trigger fields of a stored outbound message of a sender identity (the alert names the message). */
function triggerOf(message: MessageRow & { account_id: number; sender_id: string }, at: number): Omit<AlertTrigger, 'condition'> {
  return {
    accountId: message.account_id,
    senderId: message.sender_id,
    message: { messageId: message.message_id, sendRequestId: message.request_id, envelopeSender: message.mail_from, ip: message.upstream, auth: message.auth },
    at,
  };
}

/** Whether a stored message is an outbound one of a sender identity: the only mail a monitor judges. */
const ofSender = (m: MessageRow): m is MessageRow & { account_id: number; sender_id: string } =>
  m.kind === 'outbound' && m.account_id !== null && m.sender_id !== null;

/**
 * Creates the alert monitors. `trigger`, `afterPermanentFailures` and `afterComplaint` resolve once their alerts are
 * stored (a crash afterwards loses none); delivery runs in `runOnce` (tests) or on `start()`'s timer, which is also
 * kicked as alerts fire. Each delivery attempt holds a lease (storage/ports/leases.ts), renewed while it is in flight; an alert whose
 * sender died is taken over once its lease expires, and a sender whose lease was taken over records nothing.
 */
export function createAlertMonitors(deps: AlertMonitorsDeps) {
  const log = deps.logger.child({ component: 'alerts' });
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const leaseMs = deps.leaseMs ?? timeoutMs + 60_000;
  const owner = `a-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;

  /**
   * Fires every monitor of the identity's account (and of its parent, for a sub-account) that watches the condition
   * and passes `when`; returns the alerts stored.
   */
  async function raise(t: AlertTrigger, when: (m: MonitorRow) => boolean | Promise<boolean> = () => true): Promise<AlertRow[]> {
    const account = await deps.accounts.findById(t.accountId);
    if (!account) return [];
    const owners = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
    const payload = JSON.stringify(alertPayload(t, account.handle));
    const fired: AlertRow[] = [];
    for (const owner of owners) {
      for (const m of await deps.store.watching(owner, t.condition)) {
        if (!(await when(m))) continue;
        const a = await deps.store.fire(m, { senderAccountId: account.id, senderId: t.senderId, payload, at: t.at });
        if (a) fired.push(a);
      }
    }
    if (fired.length > 0) {
      log.info({ condition: t.condition, senderId: t.senderId, alerts: fired.map((a) => a.id) }, 'alert fired');
      if (loop.started) void loop.runOnce();
    }
    return fired;
  }

  /**
   * Why an email alert may not go to its address now, if it may not: the address's domain must pass Domain Lockdown
   * for the monitor's account (checked when the monitor was created over the API; checked again here for monitors
   * made before, by the operator, or whose domain has lost its authorization since). A DNS failure is retried.
   */
  async function mayMail(a: AlertRow): Promise<{ error: string; permanent: boolean } | undefined> {
    const owner = await deps.accounts.findById(a.account_id);
    const domain = domainOf(a.target);
    if (!owner) return { error: 'the monitor\'s account no longer exists', permanent: true };
    const verdict = await deps.lockdown(domain, owner);
    if (verdict.action === 'pass') return undefined;
    const dns = verdict.reason === 'lockdown-dns-error';
    return { error: `domain ${domain} is not authorized to send for this account (${verdict.reason})`, permanent: !dns };
  }

  /** One delivery attempt of a claimed alert; records the outcome and the retry slot (the webhooks' schedule). */
  async function deliver(a: AlertRow): Promise<boolean> {
    let ok = false;
    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    const payload = JSON.parse(a.payload) as Record<string, string>;
    if (a.delivery === 'webhook') {
      const signed = await deps.signer.signAlert(payload);
      const out = await postJson(deps.guard, a.target, Buffer.from(signed.body, 'utf8'), signed.headers, timeoutMs);
      statusCode = out.statusCode;
      ok = classifyStatus(out.statusCode) === '2xx_response';
      // last_error is the tenant's to read: our words (`connection refused`, `target refused by policy (…)`), no errno.
      error = ok ? null : (out.error ?? `HTTP ${out.statusCode}`);
    } else {
      const refused = await mayMail(a);
      if (refused) {
        error = refused.error;
        permanent = refused.permanent;
      } else {
        try {
          await deps.queue.accept([alertEmail(payload, a.target, deps.hostname, deps.now())]);
          ok = true;
        } catch (err) {
          log.error({ err, alertId: a.id }, 'alert email could not be queued');
          error = 'the alert email could not be queued';
        }
      }
    }
    const now = deps.now();
    const retryAt = ok || permanent ? null : decideRetryAt(a.attempts, a.fired_at, now);
    if (!(await deps.store.recordResult(leaseOf(a), { ok, statusCode, error, retryAt, now }))) {
      // Another worker took the alert over after our lease expired: its attempt stands, ours is dropped.
      log.warn({ alertId: a.id, ok }, 'alert lease lost; outcome dropped');
      return ok;
    }
    if (!ok) log.warn({ alertId: a.id, attempt: a.attempts, statusCode, error, retryAt }, retryAt === null ? 'alert delivery failed; retries exhausted' : 'alert delivery failed');
    return ok;
  }

  async function pass(): Promise<{ delivered: number; failed: number }> {
    const run = { delivered: 0, failed: 0 };
    for (;;) {
      const due = await deps.store.due(deps.now(), 100);
      let claimed = 0;
      for (const row of due) {
        const a = await deps.store.claim(row.id, owner, deps.now(), deps.now() + leaseMs);
        if (!a) continue;
        claimed++;
        if (await whileLeased(() => deliver(a), () => deps.store.renew([leaseOf(a)], deps.now() + leaseMs), leaseMs)) run.delivered++;
        else run.failed++;
      }
      if (claimed === 0 || due.length < 100) return run;
    }
  }

  const loop = createPassLoop(pass, {
    intervalMs: deps.intervalMs ?? 1000,
    onError: (err) => log.error({ err }, 'alert delivery pass failed'),
  });

  const monitors = {
    /** A condition of a sender identity occurred (abuse control's sink); resolves once its alerts are stored. */
    trigger(t: AlertTrigger): Promise<AlertRow[]> {
      return raise(t);
    },

    /**
     * The queue's report of permanently failed recipients: a policy rejection by a remote MX fires
     * `sender_id_rejected_by_destination`; a recipient-class bounce fires `sender_id_sending_to_invalid_recipients`
     * for each monitor over whose interval the identity's hard-bounce rate crosses `abuse.invalid_recipient_rate`.
     */
    async afterPermanentFailures(failed: { message: MessageRow; failures: PermanentFailure[] }[]): Promise<void> {
      for (const { message, failures } of failed) {
        if (!ofSender(message)) continue;
        const t = triggerOf(message, deps.now());
        const { accountId, senderId } = t;
        try {
          if (failures.some(policyRejection)) await raise({ ...t, condition: 'sender_id_rejected_by_destination' });
          if (failures.some(invalidRecipient)) {
            await raise({ ...t, condition: 'sender_id_sending_to_invalid_recipients' }, async (m) =>
              invalidRecipientsExceeded(await deps.senderOutcomes(accountId, senderId, t.at - m.interval_hours * HOUR_MS), deps.invalidRecipients),
            );
          }
        } catch (err) {
          log.error({ err, messageId: message.message_id }, 'alert monitors failed on delivery outcomes');
        }
      }
    },

    /**
     * A new feedback-loop complaint about `message`, told after it is stored (mta/queue/feedback.ts): fires
     * `sender_id_receiving_complaints` for each monitor over whose interval the identity's complaint rate reaches
     * `abuse.complaint_rate`. Resolves once its alerts are stored; never rejects, since the complaint stands anyway.
     */
    async afterComplaint(message: MessageRow): Promise<void> {
      if (!ofSender(message)) return;
      const t = triggerOf(message, deps.now());
      try {
        await raise({ ...t, condition: 'sender_id_receiving_complaints' }, async (m) =>
          complaintRateExceeded(await deps.senderComplaints(t.accountId, t.senderId, t.at - m.interval_hours * HOUR_MS), deps.complaints),
        );
      } catch (err) {
        log.error({ err, messageId: message.message_id }, 'alert monitors failed on a complaint');
      }
    },

    /** Delivers every due alert now; concurrent calls share the pass in progress. */
    runOnce: () => loop.runOnce(),
    /** Polls every `intervalMs` for due alerts (a lapsed lease — a crash mid-delivery — makes an alert due again). */
    start: () => loop.start(),
    /** Stops polling; waits for the pass in progress. */
    stop: () => loop.stop(),
  };
  return monitors;
}

export type AlertMonitors = ReturnType<typeof createAlertMonitors>;
