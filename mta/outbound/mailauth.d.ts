// Owns the type declarations of the parts of mailauth 7.x (plain JavaScript, no bundled types) that Sluice calls.
// Public (mailauth's README): `mailauth`, lib/dkim/sign, lib/spf. Private: the rest, imported only by ./mailauth-seam.ts.
declare module 'mailauth/lib/dkim/sign.js' {
  export function dkimSign(
    input: Buffer | string | NodeJS.ReadableStream,
    options: {
      canonicalization?: string;
      algorithm?: string;
      signTime?: Date;
      headerList?: string;
      signatureData: { signingDomain: string; selector: string; privateKey: string | Buffer; algorithm?: string; canonicalization?: string }[];
    },
  ): Promise<{ signatures: string; errors: unknown[] }>;
}

// Private: the pieces of mailauth's DKIM signer that ./mailauth-seam.ts reuses (canonicalization and header formatting).
declare module 'mailauth/lib/dkim/dkim-signer.js' {
  import { Writable } from 'node:stream';
  export class DkimSigner extends Writable {
    constructor(options: {
      canonicalization?: string;
      algorithm?: string;
      signTime?: Date;
      headerList?: string;
      signatureData: { signingDomain: string; selector: string; privateKey: string | Buffer }[];
    });
    signatureData: { signingDomain: string; selector: string; privateKey: string | Buffer; type: string }[];
    headers: { parsed: unknown[] } | undefined;
    headerList: string | undefined;
    signTime: Date | undefined;
    expires: Date | undefined;
    bodyHashes: Map<string, { hash: string | null }>;
    signatureHeaders: string[];
    errors: unknown[];
    /** 'header' until the empty line that ends the header section was seen, then 'body' (MessageParser). */
    state: 'header' | 'body';
    /** Header bytes kept until the header section ends (MessageParser). */
    headerChunks: Buffer[];
    finalize(): Promise<void>;
    /** Splits header from body (MessageParser): header chunks are kept, then emitHeaders, then nextChunk per body chunk. */
    processChunk(chunk: Buffer): Promise<void>;
    /** Parses the kept header chunks (and `chunk`, the header's last piece) and moves to the body. */
    emitHeaders(chunk?: Buffer): Promise<void>;
    /** Hashes a chunk of the body. */
    nextChunk(chunk: Buffer): Promise<void>;
  }
}

declare module 'mailauth/lib/dkim/header/index.js' {
  export function generateCanonicalizedHeader(
    type: 'DKIM' | 'ARC',
    signingHeaderLines: unknown,
    options: Record<string, unknown>,
  ): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> };
}

declare module 'mailauth/lib/tools.js' {
  export function getSigningHeaderLines(parsed: unknown[], fieldNames?: string): unknown;
  export function formatSignatureHeaderLine(type: 'DKIM' | 'ARC', values: Record<string, unknown>, folded: boolean): string;
  export function writeToStream(stream: NodeJS.WritableStream, input: Buffer | string | NodeJS.ReadableStream): Promise<void>;
}

declare module 'mailauth/lib/spf/index.js' {
  export function spf(opts: {
    sender: string;
    ip: string;
    helo?: string;
    mta?: string;
    resolver?: (name: string, rrtype: string) => Promise<unknown>;
    maxResolveCount?: number;
    maxVoidCount?: number;
  }): Promise<{ status: { result: string; comment?: string | boolean }; rr?: string; header?: string; info?: string }>;
}

declare module 'mailauth' {
  export interface AuthResult {
    dkim?: {
      results: {
        status: { result: string; comment?: string; aligned?: string | false };
        signingDomain?: string;
        selector?: string;
        info?: string;
      }[];
      headerFrom?: string[];
    };
    spf?: { status: { result: string; comment?: string }; domain?: string; info?: string } | false;
    dmarc?: { status: { result: string; comment?: string }; domain?: string; policy?: string; p?: string; sp?: string; info?: string } | false;
    arc?: { status: { result: string; comment?: string }; i?: number | false; info?: string } | false;
    bimi?: unknown;
    receivedChain?: unknown;
    headers?: string;
  }
  export function authenticate(
    input: Buffer | string | NodeJS.ReadableStream,
    opts: {
      ip?: string;
      helo?: string;
      mta?: string;
      sender?: string;
      trustReceived?: boolean;
      resolver?: (name: string, rrtype: string) => Promise<unknown>;
      disableArc?: boolean;
      disableDmarc?: boolean;
      disableBimi?: boolean;
      minBitLength?: number;
      seal?: unknown;
    },
  ): Promise<AuthResult>;
  /** ARC-seals a message (mailauth README "Sealing After Modifications"): the ARC headers to prepend, empty when none may be added. */
  export function sealMessage(
    input: Buffer | string | NodeJS.ReadableStream,
    seal: { signingDomain: string; selector: string; privateKey: string | Buffer; authResults?: string; cv?: string; i?: number },
  ): Promise<Buffer>;
}
