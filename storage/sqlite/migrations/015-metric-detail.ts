// Owns the SQL of migration 15 (user_version 15): the specification's unique_open / unique_click, and per-second
// detail of the metric roll-ups for the edges of a window.
// 15: unique_open and unique_click count the messages with at least one open / click, machine traffic included
// (issue 23: "count distinct messages with at least one such event"); what they counted until now — messages with
// a human open or click — carries on as unique_human_open / unique_human_click (copied, so history keeps its
// meaning under its new name; the old hours of unique_open/unique_click keep the human-only counts). A tracked
// message records its first open and click of any kind beside its first human ones. metric_seconds holds the same
// counters per sending account, second and campaign, kept 62 days, so that a window's start and end count to the
// second (hourly rows for the whole hours between them) instead of being rounded to the hour.
export const METRIC_DETAIL = `
  ALTER TABLE metric_rollups ADD COLUMN unique_human_open INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE metric_rollups ADD COLUMN unique_human_click INTEGER NOT NULL DEFAULT 0;
  UPDATE metric_rollups SET unique_human_open = unique_open, unique_human_click = unique_click
    WHERE unique_open <> 0 OR unique_click <> 0;

  ALTER TABLE tracked_messages ADD COLUMN first_open_at INTEGER;   -- first open, machine or not (unique_open)
  ALTER TABLE tracked_messages ADD COLUMN first_click_at INTEGER;  -- first click, machine or not (unique_click)
  UPDATE tracked_messages SET first_open_at = opened_at, first_click_at = clicked_at
    WHERE opened_at IS NOT NULL OR clicked_at IS NOT NULL;

  -- The sending (sub-)account's own counters per second since the epoch (UTC) and campaign ('' = none): a parent's
  -- figures are summed over its tree when read (only a window's edge hours are ever read). The counters are those of
  -- metric_rollups as of this migration, spelled out: a migration's text never changes with the code.
  CREATE TABLE metric_seconds (
    account_id INTEGER NOT NULL,
    second INTEGER NOT NULL,
    campaign TEXT NOT NULL,
    processed INTEGER NOT NULL DEFAULT 0,
    delivered INTEGER NOT NULL DEFAULT 0,
    bounced INTEGER NOT NULL DEFAULT 0,
    dropped INTEGER NOT NULL DEFAULT 0,
    complained INTEGER NOT NULL DEFAULT 0,
    unsubscribed INTEGER NOT NULL DEFAULT 0,
    unsubscribe_delivered INTEGER NOT NULL DEFAULT 0,
    open INTEGER NOT NULL DEFAULT 0,
    unique_open INTEGER NOT NULL DEFAULT 0,
    machine_open INTEGER NOT NULL DEFAULT 0,
    open_tracking_delivered INTEGER NOT NULL DEFAULT 0,
    unique_open_tracking_delivered INTEGER NOT NULL DEFAULT 0,
    click INTEGER NOT NULL DEFAULT 0,
    unique_click INTEGER NOT NULL DEFAULT 0,
    machine_click INTEGER NOT NULL DEFAULT 0,
    click_tracking_delivered INTEGER NOT NULL DEFAULT 0,
    unique_click_tracking_delivered INTEGER NOT NULL DEFAULT 0,
    deferred INTEGER NOT NULL DEFAULT 0,
    unique_human_open INTEGER NOT NULL DEFAULT 0,
    unique_human_click INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, second, campaign)
  ) STRICT, WITHOUT ROWID;
  `;
