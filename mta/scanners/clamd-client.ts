// Owns talking to ClamAV's clamd over TCP or a unix socket (the INSTREAM command): one message in, its verdict out.
import net from 'node:net';
import { socketTarget } from '../../config/keys.js';
import type { MessageSource } from '../../storage/message-source.js';

/** clamd's answer: clean, or the name of the signature that matched; a failure is an answer too. */
export type ClamdResult =
  | { ok: true; infected: false }
  | { ok: true; infected: true; signature: string }
  | { ok: false; error: string };

export interface ClamdClient {
  /** Never throws: connection errors, timeouts, clamd's own errors (size limit…) and garbage come back as `ok: false`. */
  scan(message: MessageSource): Promise<ClamdResult>;
}

/** INSTREAM chunk size: clamd reads each chunk into memory; 64 KiB keeps both sides' buffers small. */
const CHUNK_BYTES = 64 * 1024;
/** Longest reply we read: clamd's answer is one short line (`stream: <name> FOUND`). */
const MAX_REPLY_BYTES = 4096;

/**
 * Parses clamd's reply to INSTREAM (clamd(8), "INSTREAM"; with the `z` prefix the reply ends in NUL):
 * `stream: OK`, `stream: <signature> FOUND`, or `<message> ERROR` (e.g. `INSTREAM size limit exceeded. ERROR`).
 */
export function parseInstreamReply(reply: string): ClamdResult {
  const line = reply.replace(/\0+$/, '').trim();
  if (line === 'stream: OK') return { ok: true, infected: false };
  const found = /^stream: (.+) FOUND$/.exec(line);
  if (found) return { ok: true, infected: true, signature: found[1]! };
  if (/ ERROR$/.test(line)) return { ok: false, error: `clamd: ${line.slice(0, 200)}` };
  return { ok: false, error: `clamd: unexpected reply ${JSON.stringify(line.slice(0, 200))}` };
}

/**
 * A client for the clamd at `address` (`host:port` or an absolute unix socket path, as `filters.clamd.address`).
 * Each scan opens one connection, sends `zINSTREAM\0`, the message as length-prefixed chunks (4-byte big-endian
 * length, then the bytes) and a zero-length chunk, and reads the one reply; `timeoutMs` bounds the whole exchange.
 * clamd refuses streams over its `StreamMaxLength` (default 25 MB): set it above Sluice's 30 MB message limit.
 */
export function createClamdClient(opts: { address: string; timeoutMs: number }): ClamdClient {
  const target = socketTarget(opts.address);
  return {
    scan(message) {
      return new Promise<ClamdResult>((resolve) => {
        let settled = false;
        const chunks: Buffer[] = [];
        let size = 0;
        const socket = target.kind === 'unix' ? net.connect(target.path) : net.connect(target.port, target.host);
        const done = (r: ClamdResult) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          socket.destroy();
          resolve(r);
        };
        const timer = setTimeout(() => done({ ok: false, error: `clamd: no answer within ${opts.timeoutMs} ms` }), opts.timeoutMs);
        socket.on('error', (err) => done({ ok: false, error: `clamd: ${err.message}` }));
        socket.on('data', (c: Buffer) => {
          chunks.push(c);
          size += c.length;
          const text = Buffer.concat(chunks).toString('utf8');
          // The z-form reply ends with NUL; clamd closes the connection after it as well.
          if (text.includes('\0') || size > MAX_REPLY_BYTES) done(parseInstreamReply(text));
        });
        socket.on('end', () => done(parseInstreamReply(Buffer.concat(chunks).toString('utf8'))));
        socket.on('connect', () => {
          socket.write('zINSTREAM\0');
          sendChunks(socket, message).then(
            () => socket.write(Buffer.alloc(4)),
            (err: Error) => done({ ok: false, error: `clamd: reading the message: ${err.message}` }),
          );
        });
      });
    },
  };
}

/** Streams `message` to clamd as INSTREAM chunks (4-byte big-endian length, then the bytes), waiting on the socket. */
async function sendChunks(socket: net.Socket, message: MessageSource): Promise<void> {
  for await (const piece of message.open() as AsyncIterable<Buffer>) {
    for (let at = 0; at < piece.length; at += CHUNK_BYTES) {
      if (socket.destroyed) return;
      const part = piece.subarray(at, at + CHUNK_BYTES);
      const len = Buffer.alloc(4);
      len.writeUInt32BE(part.length);
      socket.write(len);
      // Backpressure: a slow clamd holds the reading of the message, not its bytes in our memory.
      if (!socket.write(part)) await new Promise<void>((resolve) => {
        const go = () => {
          socket.off('close', go);
          socket.off('drain', go);
          resolve();
        };
        socket.once('drain', go);
        socket.once('close', go);
      });
    }
  }
}
