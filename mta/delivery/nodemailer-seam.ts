// Owns the one reach-in into nodemailer's private parts: the EHLO extensions an SMTPConnection saw. nodemailer 10.x
// keeps them in `_supportedExtensions` and shows them only to custom AUTH handlers, never publicly. The version is
// pinned in package.json; test/mta/delivery/nodemailer-seam.test.ts fails when an upgrade moves the field.
import SMTPConnection from 'nodemailer/lib/smtp-connection';

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
 * Throws when a new (unconnected) SMTPConnection has no extension list: the SMTP client checks this when it is
 * created, so an upgrade that moved the field stops the server at start instead of failing deliveries one by one.
 */
export function checkNodemailerInternals(): void {
  ehloExtensions(new SMTPConnection({ logger: false } as SMTPConnection.Options));
}
