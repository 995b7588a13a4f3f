// Owns the PostgreSQL table of once-per-cluster jobs' leads (storage/ports/job-leads.ts).
export const JOBS_SCHEMA = `
  CREATE TABLE job_leads (
    job text PRIMARY KEY,
    owner text NOT NULL,
    lead_until bigint NOT NULL
  );
`;
