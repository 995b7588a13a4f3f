// Checks the nodemailer seam (mta/delivery/nodemailer-seam.ts) against a real smtp-server: the EHLO extensions are
// still where it reads them, and a nodemailer without them is refused loudly.
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import t, { type Test } from 'tap';
import { fastDataStreamTransform, type DataStreamState } from '../../../mta/delivery/dot-stuffing.js';
import { checkNodemailerInternals, ehloExtensions, installFastDataStream, nodemailerDataStreamTransform } from '../../../mta/delivery/nodemailer-seam.js';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
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

/** Runs `transform` as DataStream does over `chunks`; what it pushed, joined, and its counters. */
function run(transform: (this: DataStreamState, c: Buffer | string, e: BufferEncoding, done: () => void) => void, chunks: (Buffer | string)[]) {
  const out: Buffer[] = [];
  const state: DataStreamState = { inByteCount: 0, outByteCount: 0, lastByte: false, push: (b) => (out.push(b), true) };
  for (const c of chunks) transform.call(state, c, 'latin1', () => {});
  return { bytes: Buffer.concat(out).toString('latin1'), inBytes: state.inByteCount, outBytes: state.outByteCount, last: state.lastByte };
}

t.test('the fast dot-stuffer writes what nodemailer\'s does, byte for byte, however the input is cut', async (t) => {
  // A fixed seed: the same cases every run (a failure is reproducible), biased to CR, LF and dots.
  let seed = 34;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const alphabet = ['a', 'b', '.', '\r', '\n', '\r\n', '\r\n.', '\n.', '\r.', '..', ' '];
  let differ = 0;
  for (let n = 0; n < 3000; n++) {
    let text = '';
    const parts = Math.floor(rand() * 40);
    for (let i = 0; i < parts; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
    const bytes = Buffer.from(text, 'latin1');
    const chunks: (Buffer | string)[] = [];
    for (let at = 0; at < bytes.length; ) {
      const size = 1 + Math.floor(rand() * 8);
      chunks.push(n % 7 === 0 ? bytes.subarray(at, at + size).toString('latin1') : bytes.subarray(at, at + size));
      at += size;
    }
    const theirs = run(nodemailerDataStreamTransform as never, chunks);
    const ours = run(fastDataStreamTransform, chunks);
    if (JSON.stringify(theirs) !== JSON.stringify(ours)) differ++;
  }
  t.equal(differ, 0, '3,000 random texts, cut at random');
  const big = Buffer.from('line one\r\n.dot line\r\nbare lf\nbare cr\r.x\r\n'.repeat(5000), 'latin1');
  t.same(run(fastDataStreamTransform, [big.subarray(0, 70_001), big.subarray(70_001)]), run(nodemailerDataStreamTransform as never, [big.subarray(0, 70_001), big.subarray(70_001)]), 'a large message in two chunks');
});

t.test('installed, every DataStream of this process uses the twin', async (t) => {
  installFastDataStream();
  t.equal(DataStream.prototype._transform, fastDataStreamTransform);
  t.not(nodemailerDataStreamTransform, fastDataStreamTransform, "nodemailer's own is kept for the comparison");
});
