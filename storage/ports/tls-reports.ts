// Owns the TLS report port (RFC 8460, issue 35): per day and recipient policy domain, how many sessions had each TLS
// result, and which days' reports are sent.

/** Sessions of one day, policy domain, MX host, receiving address and result (RFC 8460 §4.4 failure details). */
export interface TlsResultCount {
  policyDomain: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** `sts`, or `no-policy-found` when the policy could not be had. */
  policyType: 'sts' | 'no-policy-found';
  /** The policy's lines as JSON (RFC 8460 policy-string); '[]' without one. The latest seen is kept. */
  policyText: string;
  /** '' when the result is about no MX host (a policy fetch). */
  mxHost: string;
  receivingIp: string;
  result: string;
  sessions: number;
}

/** A tls_results row as both backends store it. */
export interface TlsResultRow {
  policy_domain: string;
  day: string;
  policy_type: 'sts' | 'no-policy-found';
  policy_text: string;
  mx_host: string;
  receiving_ip: string;
  result: string;
  sessions: number | string;
}

/** The count of a stored row (PostgreSQL's bigint comes back as text). */
export const countOfRow = (r: TlsResultRow): TlsResultCount => ({
  policyDomain: r.policy_domain, day: r.day, policyType: r.policy_type, policyText: r.policy_text, mxHost: r.mx_host,
  receivingIp: r.receiving_ip, result: r.result, sessions: Number(r.sessions),
});

export interface TlsReportStore {
  /** Adds the counts (same key: sessions summed), in one unit. */
  add(counts: readonly TlsResultCount[]): Promise<void>;
  /** Policy domains with results on `day` whose report is not marked sent. */
  unreported(day: string): Promise<string[]>;
  /** The results of one policy domain on `day`. */
  resultsOf(day: string, policyDomain: string): Promise<TlsResultCount[]>;
  /** Marks the day's report of a domain sent; false when it already was (another node sent it). */
  markSent(day: string, policyDomain: string, at: number): Promise<boolean>;
  /** Deletes results and sent marks of days before `day`; returns how many rows. */
  prune(day: string): Promise<number>;
}
