// Owns the incremental JSON parser (RFC 8259) fed a request body's text as it arrives: large strings that a route
// names (message content, base64 attachments) go straight into a scratch, and what is kept counts against a bound.
import type { ByteBudget, Scratch, ScratchArea } from '../storage/scratch.js';
import { BufferBoundReached } from '../storage/message-source.js';
import { Base64Sink } from './base64-sink.js';
import { StringState, type DivertKind, type JsonPath } from './json-string-state.js';

export type { DivertKind, JsonPath } from './json-string-state.js';

/** A string taken out of the document: it reads as '' there, its bytes are in `scratch`. */
export interface Diverted {
  path: JsonPath;
  kind: DivertKind;
  scratch: Scratch;
  /** base64 only: the text was not valid base64 (RFC 4648 §4 alphabet, `=` padding at the end, whitespace allowed). */
  invalid: boolean;
  /** text only: `watch` (an option) occurs in it. */
  watched: boolean;
}

export interface JsonStreamOptions {
  /** Largest body in bytes. */
  limit: number;
  /** Which strings may be diverted, and how; called at each string's start. */
  divert?: (path: JsonPath) => DivertKind | undefined;
  /** Characters a divertable string keeps in memory before it goes to a scratch. */
  threshold?: number;
  scratch?: ScratchArea;
  /** Bytes kept in memory (the document without its diverted strings) are taken from here; past it: BufferBoundReached. */
  budget?: ByteBudget;
  /** A substring whose presence in a diverted text is reported (`watched`). */
  watch?: string;
}

/** Thrown for a body that is not one JSON value. */
export class MalformedJson extends Error {
  constructor(why: string) {
    super(`malformed JSON body: ${why}`);
    this.name = 'MalformedJson';
  }
}

const MAX_DEPTH = 64;
const WS = /[ \t\r\n]/;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

type Frame =
  | { kind: 'object'; value: Record<string, unknown>; key: string | undefined; state: 'key-or-end' | 'key' | 'colon' | 'value' | 'comma-or-end' }
  | { kind: 'array'; value: unknown[]; state: 'value-or-end' | 'value' | 'comma-or-end' };

/**
 * An incremental JSON parser (RFC 8259): feed it text with `write`, then `end()` returns the value. Strict like
 * JSON.parse (no comments, no trailing commas, control characters escaped in strings); a duplicate key keeps its
 * last value, as JSON.parse does.
 */
export class JsonStreamParser {
  private stack: Frame[] = [];
  private root: { done: boolean; value: unknown } = { done: false, value: undefined };
  private str: StringState | undefined;
  private scalar = '';
  private held = 0;
  readonly diverted: Diverted[] = [];
  /** Diverted strings a later duplicate key replaced (JSON.parse keeps the last): discarded once written. */
  readonly superseded: Diverted[] = [];
  private readonly waits: Promise<void>[] = [];

  constructor(private readonly opts: JsonStreamOptions) {}

  /** Bytes taken from the budget: the caller gives them back once it is done with the value. */
  get heldBytes(): number {
    return this.held;
  }

  /** Stops a diverted string being written (the body failed): its writer frees what it held. */
  abort(): void {
    this.str?.writer?.destroy();
    this.str = undefined;
  }

  /** Drains owed by the writers of diverted strings (awaited between chunks: backpressure). */
  takeWaits(): Promise<void>[] {
    return this.waits.splice(0);
  }

  private hold(n: number): void {
    if (n <= 0) return;
    if (this.opts.budget && !this.opts.budget.tryTake(n)) throw new BufferBoundReached(n);
    this.held += n;
  }

  private path(): (string | number)[] {
    const out: (string | number)[] = [];
    for (const f of this.stack) out.push(f.kind === 'object' ? (f.key ?? '') : f.value.length);
    return out;
  }

  write(text: string): void {
    let i = 0;
    const n = text.length;
    while (i < n) {
      if (this.str) {
        i = this.stringChars(text, i);
        continue;
      }
      const c = text[i]!;
      if (this.scalar !== '') {
        if (/[0-9eE+\-.a-z]/.test(c)) {
          this.scalar += c;
          if (this.scalar.length > 400) throw new MalformedJson('token too long');
          i++;
          continue;
        }
        this.endScalar();
        continue;
      }
      if (WS.test(c)) {
        i++;
        continue;
      }
      this.token(c);
      i++;
    }
  }

  end(): unknown {
    if (this.str) throw new MalformedJson('unterminated string');
    if (this.scalar !== '') this.endScalar();
    if (!this.root.done || this.stack.length > 0) throw new MalformedJson('unexpected end');
    return this.root.value;
  }

  private expectsValue(): boolean {
    const top = this.stack[this.stack.length - 1];
    if (!top) return !this.root.done;
    return top.kind === 'object' ? top.state === 'value' : top.state === 'value-or-end' || top.state === 'value';
  }

  private token(c: string): void {
    const top = this.stack[this.stack.length - 1];
    if (c === '"') {
      if (top?.kind === 'object' && (top.state === 'key-or-end' || top.state === 'key')) {
        this.str = new StringState(this.path(), undefined, true);
        return;
      }
      if (!this.expectsValue()) throw new MalformedJson('unexpected string');
      const path = this.path();
      this.str = new StringState(path, this.opts.divert?.(path));
      return;
    }
    if (c === '{' || c === '[') {
      if (!this.expectsValue()) throw new MalformedJson(`unexpected ${c}`);
      if (this.stack.length >= MAX_DEPTH) throw new MalformedJson('nested too deep');
      this.hold(16);
      this.stack.push(c === '{' ? { kind: 'object', value: {}, key: undefined, state: 'key-or-end' } : { kind: 'array', value: [], state: 'value-or-end' });
      return;
    }
    if (c === '}' || c === ']') {
      if (!top) throw new MalformedJson(`unexpected ${c}`);
      const closes = top.kind === 'object' ? c === '}' && (top.state === 'key-or-end' || top.state === 'comma-or-end') : c === ']' && (top.state === 'value-or-end' || top.state === 'comma-or-end');
      if (!closes) throw new MalformedJson(`unexpected ${c}`);
      this.stack.pop();
      this.value(top.value);
      return;
    }
    if (c === ':') {
      if (top?.kind !== 'object' || top.state !== 'colon') throw new MalformedJson('unexpected :');
      top.state = 'value';
      return;
    }
    if (c === ',') {
      if (!top || top.state !== 'comma-or-end') throw new MalformedJson('unexpected ,');
      top.state = top.kind === 'object' ? 'key' : 'value';
      return;
    }
    if (/[-0-9tfn]/.test(c) && this.expectsValue()) {
      this.scalar = c;
      return;
    }
    throw new MalformedJson(`unexpected character ${JSON.stringify(c)}`);
  }

  private endScalar(): void {
    const s = this.scalar;
    this.scalar = '';
    let v: unknown;
    if (s === 'true') v = true;
    else if (s === 'false') v = false;
    else if (s === 'null') v = null;
    else if (/^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(s)) v = Number(s);
    else throw new MalformedJson(`bad token ${JSON.stringify(s.slice(0, 20))}`);
    this.hold(8);
    this.value(v);
  }

  /** A complete value: into its container, or the root. */
  private value(v: unknown): void {
    const top = this.stack[this.stack.length - 1];
    if (!top) {
      if (this.root.done) throw new MalformedJson('more than one value');
      this.root = { done: true, value: v };
      return;
    }
    if (top.kind === 'object') {
      // JSON.parse keeps the last of duplicate keys: what was diverted under the replaced value is no longer in it.
      if (this.diverted.length > 0 && Object.hasOwn(top.value, top.key ?? '')) this.supersede(this.path());
      // defineProperty also keeps "__proto__" an own data property.
      Object.defineProperty(top.value, top.key ?? '', { value: v, enumerable: true, writable: true, configurable: true });
      top.key = undefined;
    } else {
      top.value.push(v);
    }
    top.state = 'comma-or-end';
  }

  /** Moves the diverted strings at or under `at` (a value a duplicate key replaced) to `superseded`. */
  private supersede(at: JsonPath): void {
    for (let i = this.diverted.length - 1; i >= 0; i--) {
      const d = this.diverted[i]!;
      if (at.every((k, j) => d.path[j] === k)) this.superseded.push(...this.diverted.splice(i, 1));
    }
  }

  /**
   * Reads string characters from `i`; returns where it stopped (the string may go on in the next chunk). What it
   * reads is appended once per chunk (or at the string's end), not once per escape: a message's every line ends in
   * two escapes (\r\n), and a piece, a budget take and a surrogate check for each held a 64 KiB chunk of short
   * lines 10-100 ms (a report of 150,000 header lines; issue 31).
   */
  private stringChars(text: string, i: number): number {
    const s = this.str!;
    const n = text.length;
    let acc = '';
    while (i < n) {
      if (s.escape === 'backslash') {
        const c = text[i++]!;
        if (c === 'u') {
          s.escape = 'unicode';
          s.hex = '';
          continue;
        }
        const mapped = ESCAPES[c];
        if (mapped === undefined) throw new MalformedJson('bad escape');
        s.escape = 'none';
        acc += mapped;
        continue;
      }
      if (s.escape === 'unicode') {
        const c = text[i++]!;
        if (!/[0-9a-fA-F]/.test(c)) throw new MalformedJson('bad \\u escape');
        s.hex += c;
        if (s.hex.length === 4) {
          s.escape = 'none';
          acc += String.fromCharCode(parseInt(s.hex, 16));
        }
        continue;
      }
      // The plain run up to the next quote, backslash or (forbidden, RFC 8259 §7) control character.
      SPECIAL.lastIndex = i;
      const m = SPECIAL.exec(text);
      const stop = m ? m.index : n;
      if (stop > i) acc += text.slice(i, stop);
      if (!m) {
        this.append(acc);
        return n;
      }
      const c = text[stop]!;
      if (c === '"') {
        this.append(acc);
        this.endString();
        return stop + 1;
      }
      if (c === '\\') {
        s.escape = 'backslash';
        i = stop + 1;
        continue;
      }
      throw new MalformedJson('control character in string');
    }
    this.append(acc);
    return i;
  }

  private append(piece: string): void {
    const s = this.str!;
    let text = s.pendingHigh + piece;
    s.pendingHigh = '';
    // A high surrogate at the end waits for its low half, so no piece encodes half a character.
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      s.pendingHigh = text.slice(-1);
      text = text.slice(0, -1);
    }
    if (text.length === 0) return;
    if (s.writer) return this.sink(text);
    s.pieces.push(text);
    s.length += text.length;
    if (s.divert && s.length > (this.opts.threshold ?? 64 * 1024) && this.opts.scratch) {
      s.writer = this.opts.scratch.writer();
      if (s.divert === 'base64') s.base64 = new Base64Sink(s.writer);
      const kept = s.pieces.join('');
      s.pieces = [];
      this.sink(kept);
      return;
    }
    this.hold(text.length);
  }

  /** Text of the diverted string being read, for its writer (batched into SINK_BATCH characters). */
  private sink(text: string): void {
    const s = this.str!;
    s.out += text;
    if (s.out.length >= SINK_BATCH) this.flush(s);
  }

  /** Writes the batched text of `s` (decoded first when it is base64); a full writer is awaited between chunks. */
  private flush(s: StringState): void {
    const text = s.out;
    s.out = '';
    if (text.length === 0) return;
    if (this.opts.watch && s.divert === 'text' && !s.watched) {
      const look = s.watchTail + text;
      if (look.includes(this.opts.watch)) s.watched = true;
      s.watchTail = look.slice(-(this.opts.watch.length - 1));
    }
    if (s.base64) s.base64.write(text);
    else s.writer!.write(Buffer.from(text, 'utf8'));
    if (s.writer!.writableNeedDrain && !s.draining) {
      const w = s.writer!;
      s.draining = true;
      this.waits.push(
        new Promise<void>((resolve) => {
          const done = () => (w.off('drain', done).off('close', done), (s.draining = false), resolve());
          w.on('drain', done).on('close', done);
        }),
      );
    }
  }

  private endString(): void {
    const s = this.str!;
    this.str = undefined;
    if (s.pendingHigh) {
      if (s.writer) this.sink(s.pendingHigh);
      else s.pieces.push(s.pendingHigh);
    }
    if (s.isKey) {
      const top = this.stack[this.stack.length - 1] as Extract<Frame, { kind: 'object' }>;
      top.key = s.pieces.join('');
      top.state = 'colon';
      return;
    }
    if (s.writer) {
      const writer = s.writer;
      this.flush(s);
      if (s.base64) s.base64.end();
      else writer.end();
      const entry: Diverted = { path: s.path, kind: s.divert!, scratch: undefined as unknown as Scratch, invalid: s.base64?.invalid ?? false, watched: s.watched };
      this.waits.push(
        new Promise<void>((resolve, reject) => {
          writer.once('finish', () => {
            try {
              entry.scratch = writer.scratch();
              resolve();
            } catch (err) {
              reject(err);
            }
          });
          // Destroyed (the body failed): nothing to keep.
          writer.once('close', () => resolve());
        }),
      );
      this.diverted.push(entry);
      this.value('');
      return;
    }
    this.value(s.pieces.length === 1 ? s.pieces[0]! : s.pieces.join(''));
  }
}

const SPECIAL = /["\\\u0000-\u001f]/g;
/** Characters of a diverted string written at once. */
const SINK_BATCH = 64 * 1024;
