// Owns the PostgreSQL roll-up tables: counters per account, campaign and hour, and per sending account, second and
// campaign, added to in the transaction that writes each event (created with the queue, whose accept adds to them).
import { METRICS } from '../../ports/metrics.js';

/** One bigint counter column per metric, in METRICS order. */
const counters = METRICS.map((m) => `    ${m} bigint NOT NULL DEFAULT 0,`).join('\n');

export const METRICS_SCHEMA = `
  -- A parent account's hourly rows count its own mail and its sub-accounts'; a sub-account's rows its own.
  -- campaign '' is all mail.
  CREATE TABLE metric_rollups (
    account_id bigint NOT NULL,
    campaign text NOT NULL,
    hour bigint NOT NULL,
${counters}
    PRIMARY KEY (account_id, campaign, hour)
  );
  CREATE INDEX metric_rollups_hour ON metric_rollups(hour);
  -- The sending account's own counters per second (a window's edges are counted to the second).
  CREATE TABLE metric_seconds (
    account_id bigint NOT NULL,
    second bigint NOT NULL,
    campaign text NOT NULL,
${counters}
    PRIMARY KEY (account_id, second, campaign)
  );
`;
