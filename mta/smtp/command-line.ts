// Owns judging one raw SMTP command line before smtp-server decodes it: TLS or HTTP instead of SMTP, invalid UTF-8
// (in the line or in the SASL credentials it carries), and whether it is a junk command.
import { isUtf8 } from 'node:buffer';

/** What a command line must not be; see `judgeCommandLine`. */
export type CommandLineFault = 'tls-handshake' | 'http-request' | 'bad-utf8';

/** HTTP methods: none is an SMTP verb. Postfix's smtpd_forbidden_commands default has CONNECT, GET and POST. */
const HTTP_METHODS = new Set(['CONNECT', 'GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH']);

/**
 * True for the first bytes of a TLS ClientHello: a TLS handshake record (content type 22, version 3.x), or an
 * SSLv2-compatible hello (length with the high bit set, message type 1). A client that starts TLS on a plaintext
 * port without STARTTLS (an implicit-TLS client on the wrong port) sends this instead of a command.
 */
export function looksLikeTlsHello(b: Buffer): boolean {
  if (b.length >= 2 && b[0] === 0x16 && b[1] === 0x03) return true;
  return b.length >= 4 && (b[0]! & 0x80) !== 0 && b[2] === 0x01 && (b[3] === 0x03 || b[3] === 0x00);
}

/**
 * Judges one command line as received (without its line break), before smtp-server decodes it. smtp-server turns
 * the bytes into text with `toString()`, which replaces every invalid UTF-8 sequence with U+FFFD: `\xff\xfe@x`
 * would become a different, valid address and be stored. RFC 6531 §3.3 allows UTF-8 in commands, never invalid
 * sequences, and NUL is not allowed anywhere in SMTP (RFC 5321 §4.1.1: commands are text). `inSasl`: the line
 * answers an AUTH challenge (base64), so its first word is not a command name.
 * - `tls-handshake`: a TLS ClientHello on a plaintext port; `http-request`: a browser or proxy (HTTP method as the
 *   command, `CONNECT host:port` included). Both end the session, as Postfix's smtpd_forbidden_commands does.
 * - `bad-utf8`: invalid UTF-8 or a NUL anywhere; refused with 500 5.5.2, nothing of it is used.
 */
export function judgeCommandLine(line: Buffer, inSasl: boolean): CommandLineFault | undefined {
  if (looksLikeTlsHello(line)) return 'tls-handshake';
  if (!inSasl) {
    const verb = /^[A-Za-z]+(?= |$)/.exec(line.subarray(0, 16).toString('latin1'))?.[0];
    if (verb && HTTP_METHODS.has(verb.toUpperCase())) return 'http-request';
  }
  if (line.includes(0) || !isUtf8(line)) return 'bad-utf8';
  return undefined;
}

/**
 * True when a line carrying SASL credentials decodes to bytes that are not UTF-8: the initial response of
 * `AUTH <mechanism> <base64>`, or (`inSasl`) a line answering an AUTH challenge. smtp-server decodes them with
 * `toString()`, which would turn invalid sequences into U+FFFD and compare that; RFC 4616 §2 makes the PLAIN
 * identities and password UTF-8 (LOGIN's username and password the same), so such credentials are refused before any
 * password is checked. `*` (cancel, RFC 4954 §4) and an empty response carry nothing.
 */
export function saslCredentialsNotUtf8(line: Buffer, inSasl: boolean): boolean {
  const text = line.toString('latin1').trim();
  const b64 = inSasl ? text : /^AUTH[ \t]+[A-Za-z0-9_-]+[ \t]+(\S+)$/i.exec(text)?.[1];
  if (b64 === undefined || b64 === '*') return false;
  return !isUtf8(Buffer.from(b64, 'base64'));
}

/**
 * Commands that keep a session alive without moving mail (Postfix smtpd_junk_command_limit counts NOOP, VRFY, ETRN
 * and RSET; HELP is the same kind). EXPN and ETRN are not implemented, so they count as unrecognized instead.
 */
const JUNK = new Set(['NOOP', 'RSET', 'VRFY', 'HELP']);

/** True when the command line (not a SASL continuation) is a junk command: see JUNK. */
export function isJunkCommand(line: Buffer): boolean {
  const verb = /^[A-Za-z]+(?=[ \t]|$)/.exec(line.subarray(0, 8).toString('latin1'))?.[0];
  return verb !== undefined && JUNK.has(verb.toUpperCase());
}
