// Owns the job_leads table (the JobLeads port): one row per once-per-cluster job naming its leader until when.
import type { Db } from './database.js';

export function createJobLeadStore(db: Db) {
  // The upsert writes only when the lead is free, lapsed or the owner's own: no change means another owner leads.
  const take = db.prepare(
    `INSERT INTO job_leads (job, owner, lead_until) VALUES (@job, @owner, @until)
     ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, lead_until = excluded.lead_until
     WHERE job_leads.owner = excluded.owner OR job_leads.lead_until <= @now OR job_leads.owner = @replacing`,
  );
  const drop = db.prepare('DELETE FROM job_leads WHERE job = ? AND owner = ?');
  const holder = db.prepare('SELECT owner, lead_until AS until FROM job_leads WHERE job = ?');
  return {
    tryLead(job: string, owner: string, now: number, ttlMs: number, replacing?: string): boolean {
      return take.run({ job, owner, now, until: now + ttlMs, replacing: replacing ?? null }).changes > 0;
    },
    leader(job: string): { owner: string; until: number } | undefined {
      return holder.get(job) as { owner: string; until: number } | undefined;
    },
    resign(job: string, owner: string): void {
      drop.run(job, owner);
    },
  };
}
