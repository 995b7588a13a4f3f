// Owns how Sluice's HTTP servers treat connections: idle keep-alive time, and the answer to a request Node's parser
// refuses before Koa sees it (header too large, bad request line).
import http from 'node:http';
import type https from 'node:https';
import type { Duplex } from 'node:stream';

/** How long a refused client may go on sending before its socket is closed anyway. */
const DRAIN_MS = 5_000;

/**
 * `clientError` handler for the HTTP servers: answers 431 for headers past the size limit (RFC 6585 §5), 400 for
 * anything else the parser refuses, then half-closes and reads what the client is still sending. Node's default
 * handler destroys the socket at once; with request bytes still unread the kernel sends a reset, and on Node 26 the
 * client sees ECONNRESET instead of (or right after) the status line.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || (err.code === 'ECONNRESET' && socket.destroyed)) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  socket.resume();
  setTimeout(() => socket.destroy(), DRAIN_MS).unref();
}

/**
 * How long an idle keep-alive connection stays open. Node's default (5 s) is shorter than what clients and proxies
 * assume (undici keeps idle sockets 4 s and trusts the server's hint; load balancers commonly 60 s): a client that
 * sends just as the server closes gets a reset, and a POST is not retried. Longer than a minute, as nginx and
 * common load-balancer guidance advise, so the client always gives up first.
 */
export const KEEP_ALIVE_MS = 65_000;

/** Applies the connection rules above to an HTTP or HTTPS server of Sluice's. */
export function configureHttpServer(server: http.Server | https.Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  // Node requires headersTimeout above keepAliveTimeout, or a reused socket may be cut while its headers arrive.
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  server.on('clientError', answerClientError);
}
