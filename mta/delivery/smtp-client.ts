// Owns dialling remote SMTP servers: host failover, STARTTLS, AUTH, connection reuse, per-destination caps.
import net from 'node:net';
import type { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { fitsSmtpPath } from '../smtp/address.js';
import { fromError, fromReply, fromSetupError, hostFailure, type RecipientResult, type SmtpError } from './smtp-results.js';
import { checkNodemailerInternals, ehloExtensions, socketOf } from './nodemailer-seam.js';
import type { DeliveryHost } from './resolve-route.js';
import { sessionResult, tlsFailureType } from './tls-results.js';
import { trustedRoots } from './mta-sts-fetch.js';
import { hasEightBit } from './eight-bit.js';
import type { SmtpClientOptions } from './smtp-client-options.js';

/** A message body the client may read more than once: each `open()` is a fresh stream from its first byte. */
export interface DeliveryBody {
  /** Bytes of the body: the SIZE parameter of MAIL FROM (RFC 1870). */
  readonly size: number;
  /** The bytes as a stream (from the body store), or in one buffer (a small body in memory); rejects when gone. */
  open(): Promise<Readable | Buffer>;
  /** Whether the body has a byte above 0x7f, when already known (seen as it was written); else scanned before dialling. */
  readonly eightBit?: boolean;
}

export interface DeliveryJob {
  /** Addresses to try, in order; the first that completes a transaction decides. */
  hosts: DeliveryHost[];
  /** Envelope sender; '' is the null reverse-path (DSNs, RFC 5321 §4.5.5). */
  mailFrom: string;
  /** Recipients of one message sharing a destination: one transaction (RFC 5321 §5). */
  recipients: string[];
  /** The message, streamed from the store for each host tried (a stream is read once: every attempt opens its own). */
  body: DeliveryBody;
  /**
   * Also try the next host when a host answers the whole transaction with a 4xx (not only on connection errors and
   * greeting/EHLO/MAIL FROM tempfails): inbound relay to equivalent downstreams fails over on any 4xx.
   */
  failoverOnTempfail?: boolean;
  /** The sending pool's address to leave from, with its EHLO name (mta/delivery/pools.ts); else the defaults. */
  source?: { address: string; ehlo: string };
}


export type { RecipientResult } from './smtp-results.js';

export interface DeliveryResult {
  /** `name[address]:port` of the host that answered last, when one did. */
  host?: string;
  results: RecipientResult[];
}

export type { SmtpClientOptions } from './smtp-client-options.js';

/** While every node's sessions fill a limit, one waiter per process asks the store again this often. */
const SLOT_POLL_MS = 500;

interface PooledConnection {
  conn: SMTPConnection;
  key: string;
  label: string;
  sent: number;
  /** Transactions before it is closed. */
  maxSent: number;
  /** The destination limit's group it counts in (`limit|<pattern>`), if any. */
  group?: string;
  /** The limit's slot it holds in the store (SmtpClientOptions.slots), given back when it closes. */
  slot?: { pattern: string; n: number };
  dead: boolean;
  idleTimer?: NodeJS.Timeout;
}

interface Destination {
  open: number;
  idle: PooledConnection[];
  waiters: (() => void)[];
  /** A limit's group waiting for another node's session to close: the one timer that asks the store again. */
  poll?: NodeJS.Timeout;
}

/** Creates the client. `close()` ends idle connections; deliveries in flight finish first. */
export function createSmtpClient(opts: SmtpClientOptions) {
  checkNodemailerInternals();
  const maxPer = opts.maxPerDestination ?? 20;
  const maxMessages = opts.maxMessagesPerConnection ?? 100;
  const idleMs = opts.idleMs ?? 10_000;
  const destinations = new Map<string, Destination>();
  let closed = false;

  function destination(key: string): Destination {
    let d = destinations.get(key);
    if (!d) {
      d = { open: 0, idle: [], waiters: [] };
      destinations.set(key, d);
    }
    return d;
  }

  function discard(pc: PooledConnection): void {
    if (pc.idleTimer) clearTimeout(pc.idleTimer);
    const d = destination(pc.key);
    const i = d.idle.indexOf(pc);
    if (i >= 0) d.idle.splice(i, 1);
    if (!pc.dead) {
      pc.dead = true;
      d.open--;
      try {
        pc.conn.quit();
      } catch {
        pc.conn.close();
      }
      d.waiters.shift()?.();
      if (pc.group) {
        const g = destination(pc.group);
        g.open--;
        g.waiters.shift()?.();
      }
      if (pc.slot) opts.slots?.release(pc.slot.pattern, pc.slot.n);
    }
  }

  /** Reports a session's TLS result when the host is under an MTA-STS policy. */
  function report(host: DeliveryHost, result: ReturnType<typeof sessionResult>): void {
    if (host.sts) opts.onTlsResult?.({ policyDomain: host.sts.domain, policy: host.sts.policy, mxHost: host.name, receivingIp: host.address, result });
  }

  function connect(host: DeliveryHost, key: string, label: string, source: DeliveryJob['source']): Promise<PooledConnection> {
    // RFC 8461 §4.2: under an enforce policy, STARTTLS with a certificate that chains to a trusted root and names the
    // MX host, or no delivery (Postfix `smtp_tls_security_level = secure`); testing mode verifies only to report.
    const enforce = host.sts?.policy.mode === 'enforce';
    return new Promise((resolve, reject) => {
      const conn = new SMTPConnection({
        host: host.address,
        port: host.port,
        name: source?.ehlo ?? opts.hostname,
        secure: host.tls === 'implicit',
        requireTLS: host.tls === 'required' || enforce,
        opportunisticTLS: host.tls === 'opportunistic' && !enforce,
        // RFC 7435 opportunistic security: encrypt when offered, do not require a verifiable certificate (as Postfix
        // `smtp_tls_security_level = may`); SNI carries the MX name so multi-tenant receivers pick the right one.
        tls: {
          rejectUnauthorized: enforce,
          ...(host.sts ? { ca: trustedRoots(opts.extraCa?.() ?? []) } : {}),
          ...(net.isIP(host.name) ? {} : { servername: host.name }),
        },
        connectionTimeout: opts.connectTimeoutMs ?? 30_000,
        greetingTimeout: opts.greetingTimeoutMs ?? 30_000,
        socketTimeout: opts.socketTimeoutMs ?? 120_000,
        ...(source ? { localAddress: source.address } : opts.localAddress ? { localAddress: opts.localAddress } : {}),
        logger: false,
      } as SMTPConnection.Options);
      const pc: PooledConnection = { conn, key, label, sent: 0, maxSent: maxMessages, dead: false };
      let settled = false;
      const fail = (err: SmtpError) => {
        if (settled) return;
        settled = true;
        conn.close();
        // A certificate Node refused surfaces as a socket error (nodemailer keeps Node's code as originalCode).
        const tlsFailed = err.code === 'ETLS' || err.command === 'STARTTLS' || /^ERR_TLS|CERT|SELF_SIGNED|UNABLE_TO/.test(err.originalCode ?? '');
        if (host.sts && tlsFailed) {
          report(host, tlsFailureType(err));
          // The deferral's log line and attempt say which policy refused the session: RFC 3463 4.7.5.
          if (enforce) Object.assign(err, { code: 'ETLS', message: `MTA-STS policy of ${host.sts.domain} (enforce): ${err.message}` });
        }
        reject(err);
      };
      conn.on('error', (err: SmtpError) => {
        if (!settled) return fail(err);
        if (!pc.dead) discard(pc);
      });
      conn.on('end', () => {
        if (settled && !pc.dead) discard(pc);
      });
      conn.connect((err?: Error) => {
        if (err) return fail(err as SmtpError);
        if (host.sts) report(host, enforce ? 'success' : sessionResult(socketOf(conn) || undefined, host.name));
        if (!host.auth) {
          settled = true;
          return resolve(pc);
        }
        conn.login({ user: host.auth.user, pass: host.auth.pass }, (loginErr?: Error | null) => {
          if (loginErr) return fail(Object.assign(loginErr as SmtpError, { command: (loginErr as SmtpError).command ?? 'AUTH' }));
          settled = true;
          resolve(pc);
        });
      });
    });
  }

  /** A connection to `host`, reusing an idle one; waits while the destination is at its cap. */
  async function acquire(host: DeliveryHost, source: DeliveryJob['source']): Promise<PooledConnection> {
    const limit = opts.limitOf?.(host.name);
    const groupKey = limit && limit.connections > 0 ? `limit|${limit.pattern}` : undefined;
    // A connection is reused only for the same destination, TLS terms, credentials, local address and destination
    // limit (a session counted under a pattern's limit serves only that pattern's hosts).
    const key = `${host.address}|${host.port}|${host.tls}|${source?.address ?? ''}|${groupKey ?? ''}|${host.sts?.policy.mode ?? ''}|${host.auth ? `${host.auth.user}\u0000${host.auth.pass}` : ''}`;
    const label = `${host.name}[${host.address}]:${host.port}`;
    const d = destination(key);
    const g = groupKey ? destination(groupKey) : undefined;
    for (;;) {
      if (closed) throw Object.assign(new Error('SMTP client is closing'), { code: 'ECONNECTION' });
      const pc = d.idle.pop();
      if (pc) {
        if (pc.idleTimer) clearTimeout(pc.idleTimer);
        if (!pc.dead) return pc;
        continue;
      }
      const groupFull = g !== undefined && g.open >= limit!.connections;
      let elsewhere = false;
      if (d.open < maxPer && !groupFull) {
        d.open++;
        if (g) g.open++;
        let slot: number | null | undefined;
        try {
          // The limit holds across processes and nodes: a session needs one of the pattern's slots in the store.
          if (g && opts.slots) slot = await opts.slots.take(limit!.pattern, limit!.connections);
          if (slot !== null) {
            const made = await connect(host, key, label, source);
            if (groupKey) made.group = groupKey;
            if (slot !== undefined) made.slot = { pattern: limit!.pattern, n: slot };
            if (limit && limit.messagesPerConnection > 0) made.maxSent = Math.min(maxMessages, limit.messagesPerConnection);
            return made;
          }
        } catch (err) {
          d.open--;
          d.waiters.shift()?.();
          if (g) {
            g.open--;
            g.waiters.shift()?.();
          }
          if (typeof slot === 'number') opts.slots!.release(limit!.pattern, slot);
          throw err;
        }
        // Every slot is held, some by other processes: step back (waking no one: nothing here was freed).
        d.open--;
        g!.open--;
        elsewhere = true;
      }
      if (groupFull || elsewhere) {
        // The pattern's sessions are all open: an idle one to another host of it makes room (closed), else wait.
        const spare = [...destinations.values()].flatMap((x) => x.idle).find((x) => x.group === groupKey && !x.dead);
        if (spare) {
          discard(spare);
          continue;
        }
      }
      await new Promise<void>((resolve) => {
        const w = groupFull || elsewhere ? g! : d;
        w.waiters.push(resolve);
        // Another node's session closing wakes no one here: one waiter of the group asks the store again in a while.
        if (elsewhere && !w.poll) w.poll = setTimeout(() => ((w.poll = undefined), w.waiters.shift()?.()), SLOT_POLL_MS);
      });
    }
  }

  function release(pc: PooledConnection, reusable: boolean): void {
    if (pc.dead) return;
    if (!reusable || closed || pc.sent >= pc.maxSent) return discard(pc);
    const d = destination(pc.key);
    pc.idleTimer = setTimeout(() => discard(pc), idleMs);
    pc.idleTimer.unref();
    d.idle.push(pc);
    d.waiters.shift()?.();
    // A waiter of the pattern may take this connection (same host) or close it for another host.
    if (pc.group) destination(pc.group).waiters.shift()?.();
  }

  /**
   * One transaction on `pc`, the body piped from a stream of its own (nodemailer dot-stuffs it as it goes) or written
   * from one buffer (a small body the fast path brought). A stream is destroyed once the server answered, or the
   * connection failed midway, so no file stays open for it.
   */
  async function send(pc: PooledConnection, job: DeliveryJob, recipients: string[], eightBit: boolean): Promise<{ err?: SmtpError; info?: SMTPConnection.SentMessageInfo }> {
    let body: Readable | Buffer;
    try {
      body = await job.body.open();
    } catch (err) {
      // Our failure, not the host's: the connection stays good for the next message.
      release(pc, true);
      throw err;
    }
    return new Promise((resolve) => {
      pc.conn.send(
        // RFC 6152 / RFC 6531: announce 8-bit bodies and UTF-8 addresses where the server supports them.
        { from: job.mailFrom, to: recipients, use8BitMime: eightBit, size: job.body.size } as SMTPConnection.Envelope,
        body,
        (err, info) => {
          if (!Buffer.isBuffer(body)) body.destroy();
          resolve(err ? { err: err as SmtpError } : { info });
        },
      );
    });
  }

  function resetThen(pc: PooledConnection): Promise<boolean> {
    if (pc.dead) return Promise.resolve(false);
    return new Promise((resolve) => pc.conn.reset((err) => resolve(!err)));
  }

  return {
    /**
     * Delivers `job.body` to `job.recipients`, trying `job.hosts` in order until one gives answers; each host tried
     * reads the body from a stream opened for it. Every recipient gets a result; a failure without an answer is
     * `deferred`. Never throws for remote behaviour; rejects when the body cannot be read (the caller defers).
     */
    async deliver(job: DeliveryJob): Promise<DeliveryResult> {
      const results: RecipientResult[] = [];
      const bad = (rcpt: string, status: string, why: string): RecipientResult => ({
        rcpt, outcome: 'bounced', code: null, status, response: why, command: null, category: 'permanent', suppress: false,
      });
      if (!fitsSmtpPath(job.mailFrom)) {
        // RFC 3463 5.1.7: bad sender's mailbox address syntax. Never written to the wire (RFC 5321 §4.1.2).
        return { results: job.recipients.map((r) => bad(r, '5.1.7', 'sender address contains characters not allowed in SMTP')) };
      }
      let recipients: string[] = [];
      for (const r of job.recipients) {
        if (r === '' || !fitsSmtpPath(r)) results.push(bad(r, '5.1.3', 'recipient address contains characters not allowed in SMTP'));
        else recipients.push(r);
      }
      if (recipients.length === 0) return { results };
      const smtpUtf8 = [job.mailFrom, ...recipients].some((a) => /[^\x00-\x7f]/.test(a));
      const eightBit = job.body.eightBit ?? (await hasEightBit(job.body));

      let last: SmtpError = Object.assign(new Error('no host to try'), { code: 'ECONNECTION' });
      let lastLabel: string | undefined;
      for (const host of job.hosts) {
        let pc: PooledConnection;
        try {
          pc = await acquire(host, job.source);
        } catch (err) {
          last = err as SmtpError;
          lastLabel = `${host.name}[${host.address}]:${host.port}`;
          continue;
        }
        lastLabel = pc.label;
        if (smtpUtf8 && !ehloExtensions(pc.conn).includes('SMTPUTF8')) {
          // RFC 6531 §3.4: a UTF-8 address cannot be sent to a server without SMTPUTF8; downgrading is not possible.
          release(pc, true);
          for (const r of recipients) results.push({ ...bad(r, '5.6.7', `${pc.label} does not support SMTPUTF8, required for this address`), command: 'MAIL FROM' });
          return { host: pc.label, results };
        }
        const { err, info } = await send(pc, job, recipients, eightBit);
        pc.sent++;
        if (!err && info) {
          const rejected = new Map(((info as { rejectedErrors?: SmtpError[] }).rejectedErrors ?? []).map((e) => [e.recipient ?? '', e]));
          for (const r of recipients) {
            const rej = rejected.get(r);
            // Accepted at RCPT: the reply to the end of data decides (RFC 5321 §4.2.5).
            results.push(rej ? fromError(r, rej) : fromReply(r, info.response, 'DATA'));
          }
          release(pc, true);
          return { host: pc.label, results };
        }
        const e = err as SmtpError;
        const tempfail = e.responseCode !== undefined && e.responseCode >= 400 && e.responseCode < 500;
        if (hostFailure(e) || (job.failoverOnTempfail && tempfail)) {
          last = e;
          release(pc, e.responseCode !== undefined && (await resetThen(pc)));
          continue;
        }
        if (e.rejectedErrors && e.rejectedErrors.length > 0) {
          // Every recipient refused at RCPT: each has its own reply.
          const byRcpt = new Map(e.rejectedErrors.map((x) => [x.recipient ?? '', x]));
          for (const r of recipients) results.push(fromError(r, byRcpt.get(r) ?? e));
        } else {
          // MAIL FROM 5xx, DATA refused or the final reply after the data: it applies to every recipient.
          for (const r of recipients) results.push(fromError(r, e));
        }
        release(pc, e.responseCode !== undefined && (await resetThen(pc)));
        return { host: pc.label, results };
      }
      recipients = recipients.filter((r) => !results.some((x) => x.rcpt === r));
      for (const r of recipients) results.push(last.command === 'MAIL FROM' ? fromError(r, last) : fromSetupError(r, last));
      return { ...(lastLabel ? { host: lastLabel } : {}), results };
    },

    /** Closes idle connections and refuses new deliveries. */
    async close(): Promise<void> {
      closed = true;
      for (const d of destinations.values()) for (const pc of [...d.idle]) discard(pc);
      await opts.slots?.close();
    },
  };
}

export type SmtpClient = ReturnType<typeof createSmtpClient>;
