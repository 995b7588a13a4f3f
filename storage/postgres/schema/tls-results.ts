// Owns PostgreSQL migration 10 (issue 35): TLS-RPT session counts and the reports sent, as SQLite's migration 34.
export const TLS_RESULTS_SCHEMA = `
  CREATE TABLE tls_results (
    policy_domain text NOT NULL,
    day text NOT NULL,
    policy_type text NOT NULL,
    policy_text text NOT NULL,
    mx_host text NOT NULL,
    receiving_ip text NOT NULL,
    result text NOT NULL,
    sessions bigint NOT NULL,
    PRIMARY KEY (day, policy_domain, policy_type, mx_host, receiving_ip, result)
  );
  CREATE TABLE tls_reports_sent (
    day text NOT NULL,
    policy_domain text NOT NULL,
    sent_at bigint NOT NULL,
    PRIMARY KEY (day, policy_domain)
  );
`;
