// Owns the SQL of migration 34 (issue 35): TLS-RPT session counts per day and policy domain, and the reports sent.
export const TLS_RESULTS = `
  CREATE TABLE tls_results (
    policy_domain TEXT NOT NULL,
    day TEXT NOT NULL,
    policy_type TEXT NOT NULL,
    policy_text TEXT NOT NULL,
    mx_host TEXT NOT NULL,
    receiving_ip TEXT NOT NULL,
    result TEXT NOT NULL,
    sessions INTEGER NOT NULL,
    PRIMARY KEY (day, policy_domain, policy_type, mx_host, receiving_ip, result)
  );
  CREATE TABLE tls_reports_sent (
    day TEXT NOT NULL,
    policy_domain TEXT NOT NULL,
    sent_at INTEGER NOT NULL,
    PRIMARY KEY (day, policy_domain)
  );
  `;
