// Owns decoding base64 text piece by piece into a scratch (a REST attachment's content, never held whole).
import type { ScratchWriter } from '../storage/scratch.js';

/**
 * RFC 4648 base64 decoded as it streams into `out`: whitespace skipped, the alphabet checked, `=` only at the very
 * end. A value that breaks a rule sets `invalid` (and writes nothing more); `end()` ends `out` either way.
 */
export class Base64Sink {
  private rest = '';
  /** `=` seen so far: nothing but `=` may follow the first, at most two in all (split anywhere between writes). */
  private pads = 0;
  invalid = false;
  constructor(private readonly out: ScratchWriter) {}

  write(text: string): void {
    if (this.invalid) return;
    const compact = text.replace(/[\r\n \t]/g, '');
    if (compact.length === 0) return;
    const m = /^([A-Za-z0-9+/]*)(=*)$/.exec(compact);
    if (!m || (this.pads > 0 && m[1] !== '') || (this.pads += m[2]!.length) > 2) {
      this.invalid = true;
      return;
    }
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
