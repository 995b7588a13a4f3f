// Owns a line-by-line SMTP client for tests that hold a session open across other events (a reload, a certificate
// change, a clock moved forward): plaintext, then STARTTLS on the same connection when asked, or implicit TLS; from
// a chosen local address.
import net from 'node:net';
import tls from 'node:tls';
import type { Test } from 'tap';

export interface SmtpTalk {
  greeting: string;
  /** Writes one command line and resolves with the complete reply (multi-line replies joined by CRLF). */
  send(line: string): Promise<string>;
  /** STARTTLS, then the TLS handshake on the same socket (any certificate accepted); resolves with the server's. */
  starttls(servername?: string): Promise<tls.PeerCertificate>;
  /** The certificate of the TLS session, if one is up. */
  peerCertificate(): tls.PeerCertificate | undefined;
  /** Writes raw bytes (part of a DATA section) without waiting for a reply. */
  write(bytes: string | Buffer): void;
  /** Writes raw bytes (the end of a DATA section, final dot included) and resolves with the reply they draw. */
  finish(bytes: string | Buffer): Promise<string>;
  /** Resolves once the server has closed the connection (at once if it has). */
  closed(): Promise<void>;
  close(): void;
}

/**
 * The complete replies at the start of `buf` (a multi-line reply as one string, CRLFs inside, none at its end) and
 * what is left of it: for raw-socket tests that read replies as they come.
 */
export function takeReplies(buf: string): { replies: string[]; rest: string } {
  const replies: string[] = [];
  let m: RegExpExecArray | null;
  while ((m = /^((?:\d{3}-[^\r\n]*\r\n)*\d{3}(?: [^\r\n]*)?\r\n)/.exec(buf))) {
    buf = buf.slice(m[1]!.length);
    replies.push(m[1]!.trimEnd());
  }
  return { replies, rest: buf };
}

/** Where smtpTalk connects: `host` (default 127.0.0.1), from `localAddress`, implicit TLS when `implicitTls`. */
export interface SmtpTalkOptions {
  host?: string;
  localAddress?: string;
  implicitTls?: boolean;
}

/** Connects to 127.0.0.1:`port` (or as `o` says) and waits for the greeting; closed at teardown. */
export async function smtpTalk(t: Test, port: number, o: SmtpTalkOptions = {}): Promise<SmtpTalk> {
  const to = { port, host: o.host ?? '127.0.0.1', ...(o.localAddress ? { localAddress: o.localAddress } : {}) };
  let socket: net.Socket | tls.TLSSocket = o.implicitTls ? tls.connect({ ...to, rejectUnauthorized: false }) : net.connect(to);
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let secure: tls.TLSSocket | undefined;
  let buf = '';
  let waiter: ((reply: string) => void) | undefined;
  const onData = (d: Buffer) => {
    buf += d.toString('latin1');
    const m = /(?:^|\r\n)\d{3} [^\r\n]*\r\n$/.exec(buf);
    if (m && waiter) {
      const w = waiter;
      waiter = undefined;
      const reply = buf.trimEnd();
      buf = '';
      w(reply);
    }
  };
  socket.on('data', onData);
  socket.on('error', () => {});
  t.teardown(() => socket.destroy());
  const next = () => new Promise<string>((resolve) => (waiter = resolve));
  const greeting = await next();
  const send = (line: string) => {
    const p = next();
    socket.write(line + '\r\n');
    return p;
  };
  return {
    greeting,
    send,
    async starttls(servername = 'mx.sluice.test') {
      const ready = await send('STARTTLS');
      if (!ready.startsWith('220')) throw new Error(`STARTTLS refused: ${ready}`);
      socket.off('data', onData);
      secure = tls.connect({ socket: socket as net.Socket, servername, rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) => {
        secure!.once('secureConnect', () => resolve());
        secure!.once('error', reject);
      });
      secure.on('data', onData);
      secure.on('error', () => {});
      socket = secure;
      return secure.getPeerCertificate();
    },
    peerCertificate: () => secure?.getPeerCertificate(),
    write: (bytes) => void socket.write(bytes),
    finish: (bytes) => {
      const p = next();
      socket.write(bytes);
      return p;
    },
    closed: () => ended,
    close: () => socket.destroy(),
  };
}
