// Owns the job_leads table on PostgreSQL (the JobLeads port): one row per once-per-cluster job naming its leader.
import type { JobLeadStore } from '../ports/job-leads.js';
import type { Pg } from './database.js';
import type { PgTimeAxis } from './leases.js';

/** The JobLeads port on PostgreSQL; `time` times the leads (database time by default: node clocks do not matter). */
export function createPgJobLeadStore(pg: Pg, time: PgTimeAxis): JobLeadStore {
  return {
    // One statement: the row is written only when the lead is free, lapsed or the owner's own (two nodes trying at
    // once serialise on the row; the second sees the first's lead and writes nothing).
    async tryLead(job, owner, now, ttlMs, replacing) {
      const rows = await pg.query(
        `INSERT INTO job_leads (job, owner, lead_until) VALUES ($1, $2, ${time.at(3)})
         ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, lead_until = excluded.lead_until
         WHERE job_leads.owner = excluded.owner OR job_leads.lead_until <= ${time.at(4)} OR job_leads.owner = $5
         RETURNING job`,
        [job, owner, time.param(now + ttlMs), time.param(now), replacing ?? null],
      );
      return rows.length > 0;
    },
    // `until` on the caller's clock, as it passed it.
    async leader(job) {
      const [row] = await pg.query<{ owner: string; until: number }>(
        `SELECT owner, ${time.back('lead_until', 2)} AS until FROM job_leads WHERE job = $1`,
        [job, time.backParam()],
      );
      return row;
    },
    async resign(job, owner) {
      await pg.exec('DELETE FROM job_leads WHERE job = $1 AND owner = $2', [job, owner]);
    },
  };
}
