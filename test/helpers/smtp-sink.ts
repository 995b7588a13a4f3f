// Owns a real smtp-server on 127.0.0.1:0 that plays a remote MX / downstream: records messages, fails on request.
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { Test } from 'tap';

export interface ReceivedMessage {
  mailFrom: string;
  /** Parameters of MAIL FROM (e.g. BODY=8BITMIME: `{ BODY: '8BITMIME' }`), as the transaction had them. */
  mailFromArgs: Record<string, unknown>;
  rcptTo: string[];
  raw: Buffer;
  secure: boolean;
  session: SMTPServerSession;
}

/** A scripted reply: `{code, message}` refuses the stage; undefined accepts. */
export type Reply = { code: number; message: string } | undefined;

export interface SinkOptions {
  /** Decide per recipient at RCPT TO. */
  onRcpt?: (rcpt: string) => Reply;
  /** Decide at end of DATA (after the body was read). */
  onData?: (msg: Omit<ReceivedMessage, 'session'>) => Reply;
  /** Offer STARTTLS (smtp-server's built-in self-signed pair). Default true. */
  tls?: boolean;
  /** The certificate STARTTLS presents, for SNI names that `sni` does not name (instead of the built-in pair). */
  pair?: { key: string; cert: string };
  /** Certificates by the SNI name the client asks for (an MX host name). */
  sni?: Record<string, { key: string; cert: string }>;
  /** Require AUTH (PLAIN/LOGIN, after STARTTLS) with these credentials, as a smarthost would. */
  auth?: { user: string; pass: string };
  /** Advertise SMTPUTF8 (smtp-server does by default). Default true. */
  smtpUtf8?: boolean;
  /** Loopback address to listen on: '127.0.0.1' (default) or '::1'. */
  host?: string;
  /**
   * Awaited after a message's body is read and before it is accepted: a test holds senders mid-transaction (the
   * session says whose: its envelope).
   */
  beforeAccept?: (session: SMTPServerSession) => Promise<void> | void;
  /**
   * A host that fails midway: once this many bytes of a message's DATA arrived, its TCP connection is cut (no reply,
   * nothing recorded); `partial` counts the bytes each cut transaction got.
   */
  dropAfter?: number;
}

export interface Sink {
  port: number;
  host: string;
  messages: ReceivedMessage[];
  /** TCP connections accepted so far (connection reuse shows as fewer connections than messages). */
  connections: () => number;
  /** The most sessions that were open at once. */
  maxOpen: () => number;
  /** User names that authenticated. */
  logins: string[];
  /** Bytes of DATA each transaction cut by `dropAfter` received before the cut. */
  partial: number[];
  /** Resolves once `n` messages have been accepted in total. */
  waitFor(n: number): Promise<ReceivedMessage[]>;
  close(): Promise<void>;
}

function fail(r: { code: number; message: string }): Error {
  return Object.assign(new Error(r.message), { responseCode: r.code });
}

export async function startSink(t: Test, opts: SinkOptions = {}): Promise<Sink> {
  const messages: ReceivedMessage[] = [];
  const waiters: { n: number; resolve: (m: ReceivedMessage[]) => void }[] = [];
  const logins: string[] = [];
  const partial: number[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let open = 0;
  let maxOpen = 0;
  const disabled = [...(opts.tls === false ? ['STARTTLS'] : []), ...(opts.auth ? [] : ['AUTH'])];
  const server = new SMTPServer({
    logger: false,
    authOptional: !opts.auth,
    disabledCommands: disabled,
    ...(opts.smtpUtf8 === false ? { hideSMTPUTF8: true } : {}),
    ...(opts.pair ? { key: opts.pair.key, cert: opts.pair.cert } : {}),
    ...(opts.sni ? { sniOptions: opts.sni } : {}),
    size: 64 * 1024 * 1024,
    onConnect(_session, cb) {
      connections++;
      open++;
      maxOpen = Math.max(maxOpen, open);
      cb();
    },
    onClose() {
      open--;
    },
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) {
        logins.push(auth.username ?? '');
        return cb(null, { user: auth.username });
      }
      cb(fail({ code: 535, message: '5.7.8 Authentication credentials invalid' }));
    },
    onRcptTo(address, _session, cb) {
      const r = opts.onRcpt?.(address.address);
      cb(r ? fail(r) : undefined);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      let got = 0;
      stream.on('data', (c: Buffer) => {
        chunks.push(c);
        got += c.length;
        if (opts.dropAfter === undefined || got < opts.dropAfter) return;
        // Cut this client's connection mid-DATA, as a host that crashes or loses its network would.
        partial.push(got);
        for (const s of sockets) if (s.remotePort === session.remotePort) s.destroy();
        stream.destroy();
      });
      stream.on('end', async () => {
        if (opts.dropAfter !== undefined && got >= opts.dropAfter) return;
        await opts.beforeAccept?.(session);
        const msg = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          mailFromArgs: (session.envelope.mailFrom && session.envelope.mailFrom.args) || {},
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
        };
        const r = opts.onData?.(msg);
        if (r) return cb(fail(r));
        messages.push({ ...msg, session });
        for (const w of [...waiters]) {
          if (messages.length >= w.n) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(messages.slice());
          }
        }
        cb(null);
      });
    },
  });
  server.on('error', () => {});
  server.server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => reject(err); // e.g. no IPv6 loopback on this machine
    server.once('error', failed);
    server.listen(0, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;
  let closed = false;
  // smtp-server's close waits up to 30 s for its sessions to end; Sluice's delivery client keeps an idle connection
  // for 10 s, so every test that delivered here would wait that long at teardown. A sink that closes is a downstream
  // gone: its connections are cut at once.
  const close = () =>
    closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          closed = true;
          server.close(() => resolve());
          for (const s of sockets) s.destroy();
        });
  t.teardown(close);
  return {
    port,
    host,
    messages,
    connections: () => connections,
    maxOpen: () => maxOpen,
    logins,
    partial,
    waitFor(n) {
      if (messages.length >= n) return Promise.resolve(messages.slice());
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    close,
  };
}
