// Owns sending one message over SMTP from a process of its own (nodemailer), so a test measuring the server's event
// loop does not measure its client's work too.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** Where the message goes and as whom: a submission client gives `auth` (STARTTLS is then required). */
export interface ChildSend {
  host: string;
  port: number;
  auth?: { user: string; pass: string };
  from: string;
  to: string[];
  /** A file holding the whole message as it is sent (CRLF lines). */
  file: string;
}

const NODEMAILER = pathToFileURL(createRequire(import.meta.url).resolve('nodemailer')).href;

/** Sends `s` from a child node process; resolves with the server's final reply (`250 …`, or the refusal's text). */
export function sendFromChild(s: ChildSend): Promise<string> {
  const script = `
    const { default: nodemailer } = await import(${JSON.stringify(NODEMAILER)});
    const s = JSON.parse(process.env.SEND);
    const transport = nodemailer.createTransport({ host: s.host, port: s.port, secure: false, requireTLS: !!s.auth,
      tls: { rejectUnauthorized: false }, name: 'client.stall.test', ...(s.auth ? { auth: s.auth } : {}),
      socketTimeout: 600000 });
    try {
      const info = await transport.sendMail({ envelope: { from: s.from, to: s.to }, raw: { path: s.file } });
      process.stdout.write(info.response);
    } catch (err) {
      process.stdout.write(err.response ?? err.message);
    } finally {
      transport.close();
    }`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, SEND: JSON.stringify(s) }, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
