// Owns the type declarations of the parts of mailauth 4.x (plain JavaScript, no bundled types) that Sluice calls.
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
}
