// Owns reading a PROXY protocol v2 header (HAProxy `send-proxy-v2`) before an SMTP session: smtp-server reads only
// v1's text line, so the listener's `_handleProxy` is wrapped to take v2's binary header and hand v1 on unchanged.
import crypto from 'node:crypto';
import net from 'node:net';
import type { Socket } from 'node:net';
import type { SMTPServer } from 'smtp-server';

/** The 12 bytes every v2 header begins with (haproxy.org/download/2.6/doc/proxy-protocol.txt, 2.2). */
export const PROXY_V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
/** Signature, version/command, family/protocol, length. */
const FIXED = 16;
/** A header longer than this is refused (addresses are at most 216 bytes; TLVs may follow, HAProxy sends few). */
const MAX_LENGTH = 1024;

interface SocketOptions {
  id: string;
  remoteAddress?: string;
  remotePort?: number;
  ignore?: boolean;
}
type ProxyCallback = (err: Error | null, options?: SocketOptions) => void;
interface ServerInternals {
  options: { useProxy?: boolean | string[]; ignoredHosts?: string[] };
  _expectsProxyHeader(socket: Socket): boolean;
  _handleProxy(socket: Socket, callback: ProxyCallback): void;
}

/** The client a v2 header names, `local` for a LOCAL command (the balancer's own health check), or a problem. */
export function parseProxyV2(header: Buffer): { address: string; port: number } | 'local' | { error: string } {
  const verCmd = header[12] as number;
  if (verCmd >> 4 !== 2) return { error: 'unsupported PROXY protocol version' };
  const command = verCmd & 0x0f;
  if (command === 0) return 'local';
  if (command !== 1) return { error: 'unknown PROXY command' };
  const family = (header[13] as number) >> 4;
  const body = header.subarray(FIXED);
  if (family === 1 && body.length >= 12) {
    return { address: [...body.subarray(0, 4)].join('.'), port: body.readUInt16BE(8) };
  }
  if (family === 2 && body.length >= 36) {
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(body.readUInt16BE(i).toString(16));
    // Canonical text (::ffff:a.b.c.d stays as the kernel would print it for a mapped address).
    const sock = new net.SocketAddress({ address: groups.join(':'), family: 'ipv6' });
    return { address: sock.address, port: body.readUInt16BE(32) };
  }
  // UNSPEC or UNIX: no client address to take; the balancer speaks for itself.
  if (family === 0) return 'local';
  return { error: 'unsupported PROXY address family' };
}

/**
 * Makes `server` accept a v2 header from the peers its `useProxy` lists (v1 goes on to smtp-server's own reader). A
 * peer not listed gets no header read at all: its PROXY bytes reach the SMTP parser as an unknown command.
 */
export function acceptProxyV2(server: SMTPServer): void {
  const s = server as unknown as ServerInternals;
  const library = s._handleProxy.bind(s);
  s._handleProxy = (socket, callback) => {
    if (!s._expectsProxyHeader(socket)) return library(socket, callback);
    const id = BigInt(`0x${crypto.randomBytes(10).toString('hex')}`).toString(32).padStart(16, '0');
    let buf = Buffer.alloc(0);
    let finished = false;
    /** Stops reading for the header: the socket's bytes are smtp-server's (or nobody's) from here on. */
    const detach = () => {
      finished = true;
      socket.off('readable', onReadable);
      socket.off('close', onClose);
      socket.off('error', onClose);
    };
    const finish = (err: Error | null, opts?: SocketOptions) => {
      if (finished) return;
      detach();
      if (err) {
        socket.on('error', () => {});
        socket.destroy();
      }
      callback(err, opts);
    };
    const onClose = () => finish(new Error('socket closed before the PROXY header'));
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) buf = Buffer.concat([buf, chunk]);
      const seen = Math.min(buf.length, PROXY_V2_SIGNATURE.length);
      if (!buf.subarray(0, seen).equals(PROXY_V2_SIGNATURE.subarray(0, seen))) {
        // Not v2: give the bytes back and let smtp-server read its v1 line (or refuse what is neither).
        detach();
        socket.unshift(buf);
        return library(socket, callback);
      }
      if (buf.length < FIXED) return;
      const length = buf.readUInt16BE(14);
      if (length > MAX_LENGTH) return finish(new Error('PROXY v2 header too long'));
      if (buf.length < FIXED + length) return;
      const parsed = parseProxyV2(buf.subarray(0, FIXED + length));
      const rest = buf.subarray(FIXED + length);
      if (typeof parsed === 'object' && 'error' in parsed) return finish(new Error(parsed.error));
      if (rest.length > 0) socket.unshift(rest);
      const opts: SocketOptions = { id };
      if (parsed !== 'local') {
        opts.remoteAddress = parsed.address;
        opts.remotePort = parsed.port;
      }
      opts.ignore = s.options.ignoredHosts?.includes(opts.remoteAddress ?? socket.remoteAddress ?? '') ?? false;
      finish(null, opts);
    };
    socket.on('readable', onReadable);
    socket.on('close', onClose);
    socket.on('error', onClose);
  };
}
