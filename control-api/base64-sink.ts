// Owns decoding base64 text piece by piece into a scratch (a REST attachment's content, never held whole).
import type { ScratchWriter } from '../storage/scratch.js';

/**
 * RFC 4648 base64 decoded as it streams into `out`: whitespace skipped, the alphabet checked, `=` only at the very
 * end. A value that breaks a rule sets `invalid` (and writes nothing more); `end()` ends `out` either way.
 */
export class Base64Sink {
  private rest = '';
  private padded = false;
  invalid = false;
  constructor(private readonly out: ScratchWriter) {}

  write(text: string): void {
    if (this.invalid) return;
    const compact = text.replace(/[\r\n \t]/g, '');
    if (compact.length === 0) return;
    if (this.padded || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
      this.invalid = true;
      return;
    }
    if (compact.includes('=')) this.padded = true;
    const all = this.rest + compact;
    const whole = all.length - (all.length % 4);
    this.rest = all.slice(whole);
    if (whole > 0) this.out.write(Buffer.from(all.slice(0, whole), 'base64'));
  }

  end(): void {
    // RFC 4648 §3.2: padded to a multiple of four (what isBase64 in send-request.ts required of a whole value too).
    if (this.rest.length > 0) this.invalid = true;
    this.out.end();
  }
}
