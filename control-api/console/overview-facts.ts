// Owns what the console's overview is told about the serving process beyond the API's own routes and stores (the
// version, its certificates, its last error lines), as bin/wiring-overview.ts gathers them.

/** One error-level log line kept for the overview (bin/error-ring.ts). */
export interface ErrorLine {
  at: number;
  level: 'error' | 'fatal';
  /** The logger's `component` binding (mx, tls, webhooks…), when it has one. */
  component: string | undefined;
  msg: string;
  /** The error's message, when the line carried one. */
  err: string | undefined;
}

/** A certificate the listeners present, or why it cannot be read. */
export type CertificateFact =
  | { use: string; source: string; names: string[]; notAfter: number; fingerprint: string }
  | { use: string; error: string };

export interface OverviewFacts {
  version: string;
  /** When this process wired its parts (ms). */
  startedAt: number;
  /** The certificates of the SMTP listeners and, when on, of HTTPS, read as a restart would read them. */
  certificates(): Promise<CertificateFact[]>;
  /** The last error-level log lines of this process, newest first. */
  lastErrors(): readonly ErrorLine[];
  /** The database's size on disk in bytes (storage/ports/health.ts `size`). */
  storageBytes(): Promise<number>;
}
