// Owns the job_leads table on PostgreSQL (the JobLeads port): one row per once-per-cluster job naming its leader.
import type { JobLeadStore } from '../ports/job-leads.js';
import type { Pg } from './database.js';

export function createPgJobLeadStore(pg: Pg): JobLeadStore {
  return {
    // One statement: the row is written only when the lead is free, lapsed or the owner's own (two nodes trying at
    // once serialise on the row; the second sees the first's lead and writes nothing).
    async tryLead(job, owner, now, ttlMs, replacing) {
      const rows = await pg.query(
        `INSERT INTO job_leads (job, owner, lead_until) VALUES ($1, $2, $3)
         ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, lead_until = excluded.lead_until
         WHERE job_leads.owner = excluded.owner OR job_leads.lead_until <= $4 OR job_leads.owner = $5
         RETURNING job`,
        [job, owner, now + ttlMs, now, replacing ?? null],
      );
      return rows.length > 0;
    },
    async leader(job) {
      const [row] = await pg.query<{ owner: string; until: number }>('SELECT owner, lead_until AS until FROM job_leads WHERE job = $1', [job]);
      return row;
    },
    async resign(job, owner) {
      await pg.exec('DELETE FROM job_leads WHERE job = $1 AND owner = $2', [job, owner]);
    },
  };
}
