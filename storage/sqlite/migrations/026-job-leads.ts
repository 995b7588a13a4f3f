// Owns the SQL of migration 26: the lead of each once-per-cluster job (storage/ports/job-leads.ts).
// Before it, only the first child of a process tree ran retention, the body sweep and DKIM retirement: a second
// `sluice serve` on the same data_dir (or a second node) ran them again.
export const JOB_LEADS = `
  CREATE TABLE job_leads (
    job TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    lead_until INTEGER NOT NULL
  ) STRICT;
  `;
