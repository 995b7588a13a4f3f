// Owns the reach-ins into nodemailer's private parts: the EHLO extensions an SMTPConnection saw (nodemailer 10.x keeps
// them in `_supportedExtensions` and shows them only to custom AUTH handlers, never publicly), and its DataStream's
// transform, replaced by a faster twin (./dot-stuffing.ts). The version is pinned in package.json;
// test/mta/delivery/nodemailer-seam.test.ts fails when an upgrade moves either.
import SMTPConnection from 'nodemailer/lib/smtp-connection';
// No `.js`: nodemailer's exports map `./lib/*.js` and `./lib/*`, and a resolver that takes the second for a `.js`
// path (tap's loader does) looks for data-stream.js.js.
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
import { fastDataStreamTransform } from './dot-stuffing.js';

const gone = () =>
  new Error('nodemailer internals changed: SMTPConnection._supportedExtensions is gone; re-check mta/delivery/nodemailer-seam.ts');

/**
 * The extensions nodemailer recognised in the server's last EHLO reply (it records only SMTPUTF8, DSN, 8BITMIME,
 * REQUIRETLS, PIPELINING and SIZE). Throws when nodemailer no longer keeps them where we read them: a silent empty
 * list would bounce every UTF-8 address as if no server supported SMTPUTF8 (RFC 6531 §3.4).
 */
export function ehloExtensions(conn: SMTPConnection): readonly string[] {
  const extensions = (conn as unknown as { _supportedExtensions?: unknown })._supportedExtensions;
  if (!Array.isArray(extensions)) throw gone();
  return extensions as string[];
}

/**
 * The socket under a connected SMTPConnection (nodemailer keeps it in `_socket`; after STARTTLS, the TLSSocket): what
 * MTA-STS testing mode reads its verification from. Throws when nodemailer no longer keeps it there.
 */
export function socketOf(conn: SMTPConnection): import('node:tls').TLSSocket | false {
  const socket = (conn as unknown as { _socket?: unknown })._socket;
  if (socket === undefined) throw new Error('nodemailer internals changed: SMTPConnection._socket is gone; re-check mta/delivery/nodemailer-seam.ts');
  return socket as import('node:tls').TLSSocket | false;
}

/**
 * Throws when a new (unconnected) SMTPConnection has no extension list: the SMTP client checks this when it is
 * created, so an upgrade that moved the field stops the server at start instead of failing deliveries one by one.
 */
export function checkNodemailerInternals(): void {
  const fresh = new SMTPConnection({ logger: false } as SMTPConnection.Options);
  ehloExtensions(fresh);
  socketOf(fresh);
  installFastDataStream();
}

/** nodemailer's own DataStream transform, as it shipped (the seam's test compares the twin with it). */
export const nodemailerDataStreamTransform = DataStream.prototype._transform;

/**
 * Makes every nodemailer SMTP connection of this process dot-stuff with ./dot-stuffing.ts (the same bytes, without a
 * JavaScript test of every byte). Throws when DataStream no longer has the transform this replaces.
 */
export function installFastDataStream(): void {
  if (typeof nodemailerDataStreamTransform !== 'function' || nodemailerDataStreamTransform.length !== 3) {
    throw new Error('nodemailer internals changed: DataStream._transform is gone; re-check mta/delivery/nodemailer-seam.ts');
  }
  DataStream.prototype._transform = fastDataStreamTransform as typeof DataStream.prototype._transform;
}
