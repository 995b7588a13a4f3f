// Owns how Sluice's HTTP servers treat connections: idle keep-alive time, the answer to a request Node's parser
// refuses before Koa sees it (header too large, bad request line), and what becomes of a body left unread by an answer.
import http from 'node:http';
import type https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** How long a refused client may go on sending before its socket is closed anyway. */
export const DRAIN_MS = 5_000;

/**
 * Largest declared body (Content-Length) an early answer drains to keep the connection: reading 64 KiB more costs
 * little, and a client that reuses connections (undici, browsers) keeps its socket. Anything larger, or of unknown
 * length (chunked), is not read through: the answer says `Connection: close`.
 */
export const DRAIN_BYTES_MAX = 64 * 1024;

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

/** True when the request announced a body (RFC 9112 §6.3: Transfer-Encoding, or a Content-Length above 0). */
function hasBody(req: http.IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Sockets closing after an early answer: no further request on them is processed (RFC 9112 §9.6). */
const closing = new WeakSet<Socket>();

/**
 * Closes `socket` after the last answer without losing it (RFC 9112 §9.6): a close with request bytes still unread
 * makes the kernel send a reset, and a client may then lose the answer it has not read yet. So the write side is
 * shut (FIN), what the client still sends is read and dropped, and the socket is closed once the body has ended or
 * the client closed — at the latest after DRAIN_MS.
 */
function lingerThenClose(socket: Socket, req: http.IncomingMessage, destroySoon: () => void): void {
  // A destroyed request's body can no longer be read through it: close as Node would.
  if (req.complete || req.destroyed) return destroySoon();
  socket.end();
  req.resume();
  const timer = setTimeout(() => socket.destroy(), DRAIN_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  req.once('end', destroySoon).once('close', destroySoon);
}

/**
 * Decides, as the answer's header is written, what becomes of a request body not read to its end (an answer given
 * early: 400 for JSON malformed mid-body, 413, 415, 401/403 before the body is read). Left alone, Node keeps the
 * connection alive with the rest of the body unread, paused if a reader stopped mid-body: the next request on the
 * socket is never answered. A declared body of at most DRAIN_BYTES_MAX is drained after the answer (at most
 * DRAIN_MS, then the socket is closed) and the connection kept; any other gets `Connection: close` and a lingering
 * close.
 */
function guardUnreadBody(req: http.IncomingMessage, res: http.ServerResponse): void {
  const writeHead = res.writeHead;
  let drain = false;
  // Node writes the header through writeHead, also implicitly (the first write or end): the one point to decide.
  res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    res.writeHead = writeHead;
    if (!req.complete && hasBody(req)) {
      const declared = Number(req.headers['content-length'] ?? NaN);
      if (!req.destroyed && req.headers['transfer-encoding'] === undefined && declared <= DRAIN_BYTES_MAX) drain = true;
      else {
        this.setHeader('Connection', 'close');
        // The response's socket: a request a reader gave up on (destroyed) no longer names it.
        const socket = (this.socket ?? req.socket) as Socket | null;
        if (socket) {
          closing.add(socket);
          // Node closes a `Connection: close` socket with destroySoon() once the answer is written: close it gently.
          const destroySoon = socket.destroySoon.bind(socket);
          socket.destroySoon = () => lingerThenClose(socket, req, destroySoon);
        }
      }
    }
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
  res.once('finish', () => {
    if (!drain || req.complete) return;
    req.resume(); // a reader that stopped mid-body left it paused: Node only drains a body nobody started reading
    const socket = res.socket ?? req.socket;
    const timer = setTimeout(() => socket?.destroy(), DRAIN_MS).unref();
    req.once('end', () => clearTimeout(timer)).once('close', () => clearTimeout(timer));
  });
}

/**
 * Wraps a server's request listeners so that every request goes through guardUnreadBody first, and a request that
 * arrives on a socket closing after an early answer is not processed (RFC 9112 §9.6: a server that sent `close`
 * MUST NOT process further requests on that connection); its bytes are read and dropped until the socket closes.
 */
function guardRequests(server: http.Server | https.Server): void {
  const listeners = server.listeners('request') as http.RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing.has(req.socket)) {
      req.resume();
      return;
    }
    // A request without a body (most GETs) can leave nothing unread: no per-request hook for it.
    if (hasBody(req)) guardUnreadBody(req, res);
    for (const listener of listeners) listener.call(server, req, res);
  });
}

/**
 * Applies the connection rules above to an HTTP or HTTPS server of Sluice's, once its request listener is set (the
 * listener is wrapped: see guardRequests).
 */
export function configureHttpServer(server: http.Server | https.Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  // Node requires headersTimeout above keepAliveTimeout, or a reused socket may be cut while its headers arrive.
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  server.on('clientError', answerClientError);
  guardRequests(server);
}
