// Checks the nodemailer seam (mta/delivery/nodemailer-seam.ts) against a real smtp-server: the EHLO extensions are
// still where it reads them, and a nodemailer without them is refused loudly.
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import t, { type Test } from 'tap';
import { checkNodemailerInternals, ehloExtensions } from '../../../mta/delivery/nodemailer-seam.js';
import { startSink } from '../../helpers/smtp-sink.js';

/** A nodemailer connection to the sink on `port`, resolved once it has greeted and sent EHLO. */
async function connected(t: Test, port: number): Promise<SMTPConnection> {
  const conn = new SMTPConnection({ host: '127.0.0.1', port, ignoreTLS: true, logger: false } as SMTPConnection.Options);
  conn.on('error', () => {});
  t.teardown(() => conn.close());
  await new Promise<void>((resolve, reject) => {
    conn.once('error', reject);
    conn.connect(() => resolve());
  });
  return conn;
}

t.test("a real server's EHLO extensions are read from nodemailer's connection", async (t) => {
  const sink = await startSink(t, { tls: false });
  const extensions = ehloExtensions(await connected(t, sink.port));
  for (const ext of ['SMTPUTF8', 'PIPELINING', '8BITMIME', 'SIZE']) t.ok(extensions.includes(ext), ext);

  const plain = await startSink(t, { tls: false, smtpUtf8: false });
  const without = ehloExtensions(await connected(t, plain.port));
  t.notOk(without.includes('SMTPUTF8'), 'a server that does not offer SMTPUTF8');
  t.ok(without.includes('PIPELINING'), 'the rest are still there');
});

t.test('a connection without the extension list is refused loudly', async (t) => {
  t.doesNotThrow(() => checkNodemailerInternals(), 'the installed nodemailer has it');
  const message = 'nodemailer internals changed: SMTPConnection._supportedExtensions is gone; re-check mta/delivery/nodemailer-seam.ts';
  t.throws(() => ehloExtensions({} as SMTPConnection), { message });
});
