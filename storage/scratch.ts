// Owns scratch space for messages being received or composed: bytes kept in memory up to a bound, spilled to a
// private, already unlinked file under data_dir/tmp beyond it, read back as often as needed, gone when discarded.
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { asStorageFailure } from './disk-space.js';

/**
 * The process-wide count of message bytes held in memory (mta/buffer-budget.ts implements it): a scratch takes from
 * it what it keeps in memory and spills to disk when refused, so it never refuses a message itself.
 */
export interface ByteBudget {
  /** Takes `n` bytes; false (nothing taken) when that would pass the bound. */
  tryTake(n: number): boolean;
  /** Gives back `n` bytes taken before. */
  give(n: number): void;
}

/** Bytes written to a scratch, readable any number of times until discarded. */
export interface Scratch {
  readonly size: number;
  /** Every byte, when they stayed in memory (a small message); undefined once spilled to a file. */
  readonly bytes: Buffer | undefined;
  /** Bytes `start` (default 0) to `end` (exclusive, default the end) as a stream. */
  open(start?: number, end?: number): Readable;
  /** Bytes `start` to `end` (exclusive) as one buffer: for a small range (a header section, a sample). */
  read(start: number, end: number): Promise<Buffer>;
  /** Frees the memory or removes the file; reading afterwards fails. Idempotent. */
  discard(): Promise<void>;
}

export interface ScratchAreaOptions {
  /** Directory for spilled scratch files (data_dir/tmp; created 0700); each is unlinked as soon as it is open. */
  dir: string;
  /** Bytes a scratch keeps in memory before it spills to a file. */
  memoryBytes: number;
  budget?: ByteBudget | undefined;
}

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** Spilled bytes are written in batches of this size (fewer system calls than one per network chunk). */
const WRITE_BATCH = 64 * 1024;

/** A scratch of bytes held in memory: `chunks` joined at most once. */
class MemoryScratch implements Scratch {
  private joined: Buffer | undefined;
  private gone = false;
  constructor(
    private chunks: Buffer[],
    readonly size: number,
    private readonly release: () => void,
  ) {}

  get bytes(): Buffer | undefined {
    if (this.gone) return undefined;
    if (!this.joined) {
      this.joined = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
      this.chunks = [this.joined];
    }
    return this.joined;
  }

  open(start = 0, end = this.size): Readable {
    const bytes = this.bytes;
    if (!bytes) throw new Error('scratch discarded');
    return Readable.from([bytes.subarray(start, end)], { objectMode: false });
  }

  async read(start: number, end: number): Promise<Buffer> {
    const bytes = this.bytes;
    if (!bytes) throw new Error('scratch discarded');
    return bytes.subarray(start, Math.min(end, this.size));
  }

  async discard(): Promise<void> {
    if (this.gone) return;
    this.gone = true;
    this.chunks = [];
    this.joined = undefined;
    this.release();
  }
}

/**
 * A scratch spilled to a file. The file was unlinked as soon as it was created: its bytes live as long as the open
 * handle, so neither a crash nor a kill -9 can leave one behind.
 */
class FileScratch implements Scratch {
  private gone = false;
  constructor(
    private readonly fh: fsp.FileHandle,
    readonly size: number,
  ) {}

  get bytes(): undefined {
    return undefined;
  }

  open(start = 0, end = this.size): Readable {
    if (this.gone) throw new Error('scratch discarded');
    // An empty range still gives a stream that ends (createReadStream's `end` is inclusive). Positional reads on the
    // one handle: any number of readers at once, none of them closing it.
    if (end <= start) return Readable.from([], { objectMode: false });
    return this.fh.createReadStream({ start, end: end - 1, autoClose: false, emitClose: false });
  }

  async read(start: number, end: number): Promise<Buffer> {
    if (this.gone) throw new Error('scratch discarded');
    const length = Math.max(0, Math.min(end, this.size) - start);
    const buf = Buffer.alloc(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await this.fh.read(buf, got, length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  }

  async discard(): Promise<void> {
    if (this.gone) return;
    this.gone = true;
    await this.fh.close();
  }
}

/**
 * A Writable that keeps what it is given in memory up to `memoryBytes` (taken from the budget as it grows), and
 * past that — or as soon as the budget refuses — writes everything to a fresh private file instead. Once it has
 * finished, `scratch()` gives the bytes back. Destroyed (the source failed, the client left) it frees what it
 * held and removes its file. A write error (a full disk: ENOSPC) does not fail the stream: the writer removes its
 * file, takes the rest without keeping it (so an SMTP client can still be read to the end of its DATA and get its
 * one reply) and `scratch()` throws that error.
 */
export class ScratchWriter extends Writable {
  private chunks: Buffer[] = [];
  private held = 0;
  private size = 0;
  private fh: fsp.FileHandle | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private result: Scratch | undefined;
  private failed: Error | undefined;

  constructor(private readonly opts: ScratchAreaOptions) {
    super();
  }

  /** Bytes written so far. */
  get bytesWritten(): number {
    return this.size;
  }

  /** The error that made the writer stop keeping bytes (a full disk), if any. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** The bytes, once the writer has finished; throws the write error when there was one, or before the end. */
  scratch(): Scratch {
    if (this.failed) throw this.failed;
    if (!this.result) throw new Error('scratch not finished');
    return this.result;
  }

  /** Records a write error, drops what was kept and closes the file; the writer keeps nothing from now on. */
  private fail(err: Error, done: () => void): void {
    // ENOSPC and kin become the seam's StorageUnavailable: the listeners and the API answer them as a full disk.
    this.failed ??= asStorageFailure(err) as Error;
    this.chunks = [];
    this.pending = [];
    this.pendingBytes = 0;
    this.giveBack();
    const fh = this.fh;
    this.fh = undefined;
    (fh ? fh.close().catch(() => {}) : Promise.resolve()).then(done, done);
  }

  private async spill(): Promise<void> {
    await fsp.mkdir(this.opts.dir, { recursive: true, mode: DIR_MODE });
    const file = path.join(this.opts.dir, `${crypto.randomBytes(12).toString('hex')}.scratch`);
    this.fh = await fsp.open(file, 'wx+', FILE_MODE);
    // Unlinked at once (as tmpfile(3) does): the handle keeps the bytes, nothing is left on disk after a crash.
    await fsp.rm(file, { force: true });
    this.pending = this.chunks;
    // Every chunk kept so far, including the one that did not fit (it was never taken from the budget).
    this.pendingBytes = this.chunks.reduce((n, c) => n + c.length, 0);
    this.chunks = [];
    this.giveBack();
    await this.flush();
  }

  private giveBack(): void {
    if (this.held > 0) this.opts.budget?.give(this.held);
    this.held = 0;
  }

  private async flush(): Promise<void> {
    if (this.pendingBytes === 0 || !this.fh) return;
    const chunk = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    for (let at = 0; at < chunk.length; ) at += (await this.fh.write(chunk, at)).bytesWritten;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    if (!Buffer.isBuffer(chunk)) chunk = Buffer.from(chunk);
    this.size += chunk.length;
    if (this.failed) return done();
    if (!this.fh) {
      const fits = this.held + chunk.length <= this.opts.memoryBytes && (this.opts.budget?.tryTake(chunk.length) ?? true);
      if (fits) {
        this.chunks.push(chunk);
        this.held += chunk.length;
        return done();
      }
      // Not taken from the budget: it goes to the file with the rest.
      this.chunks.push(chunk);
      this.spill().then(
        () => done(),
        (err: Error) => this.fail(err, () => done()),
      );
      return;
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < WRITE_BATCH) return done();
    this.flush().then(
      () => done(),
      (err: Error) => this.fail(err, () => done()),
    );
  }

  override _final(done: (err?: Error | null) => void): void {
    if (this.failed) return done();
    if (!this.fh) {
      const held = this.held;
      this.held = 0;
      this.result = new MemoryScratch(this.chunks, this.size, () => this.opts.budget?.give(held));
      this.chunks = [];
      return done();
    }
    const fh = this.fh;
    this.flush().then(
      () => {
        this.fh = undefined;
        this.result = new FileScratch(fh, this.size);
        done();
      },
      (err: Error) => this.fail(err, () => done()),
    );
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    // A finished writer's bytes belong to its Scratch now; only an unfinished one cleans up here.
    if (this.result) return done(err);
    this.chunks = [];
    this.pending = [];
    this.giveBack();
    const fh = this.fh;
    this.fh = undefined;
    (fh ? fh.close().catch(() => {}) : Promise.resolve()).then(
      () => done(err),
      () => done(err),
    );
  }
}

/** Where scratches are made. */
export function createScratchArea(opts: ScratchAreaOptions) {
  return {
    /** A new scratch writer. */
    writer(): ScratchWriter {
      return new ScratchWriter(opts);
    },
    /** A scratch holding `bytes` (already in memory: charged to nobody). */
    of(bytes: Buffer): Scratch {
      return new MemoryScratch([bytes], bytes.length, () => {});
    },
    dir: opts.dir,
  };
}

export type ScratchArea = ReturnType<typeof createScratchArea>;
