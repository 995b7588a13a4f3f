// Owns the SQL of migration 9 (user_version 9): open and click tracking, and the hourly metric roll-ups.
// 9: engagement (issue 13) — which tracking a message carries, what its tracking tokens name (the links, the hosts
// they were issued for, first open and click), and the per-account, per-campaign, per-hour counters every event
// adds to in the transaction that writes it, so that a metrics query never reads raw events.
export const ENGAGEMENT = `
  -- Bit flags: 1 open pixel, 2 click-tracked links, 4 List-Unsubscribe (ours or the caller's). 0 for all other mail.
  ALTER TABLE messages ADD COLUMN tracking INTEGER NOT NULL DEFAULT 0;

  -- One row per message sent with open or click tracking; a tracking token names its key. Kept
  -- retention.tracking_days, independently of the message (its links must work after the body is pruned).
  CREATE TABLE tracked_messages (
    id INTEGER PRIMARY KEY,
    key BLOB NOT NULL UNIQUE,            -- 16 bytes: the UUID of the message's Message-ID
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    request_id TEXT NOT NULL,
    message_id TEXT NOT NULL,            -- Message-ID header value without <>
    from_email TEXT,
    campaign_id TEXT,
    recipients TEXT NOT NULL,            -- JSON array of the envelope recipients
    links TEXT,                          -- JSON array of target URLs; a click token names an index (NULL: no click tracking)
    click_host TEXT,                     -- host name the click tokens were issued for
    open_host TEXT,                      -- host name the open token was issued for
    custom INTEGER NOT NULL DEFAULT 0,   -- 1: click_host is a custom tracking domain; 2: open_host is one
    created_at INTEGER NOT NULL,
    delivered_at INTEGER,                -- first recipient delivered (link scanners fetch within seconds of it)
    opened_at INTEGER,                   -- first open not marked machine (unique_open)
    clicked_at INTEGER,                  -- first click not marked machine (unique_click)
    last_click_at INTEGER,
    last_click_link INTEGER
  ) STRICT;
  CREATE INDEX tracked_messages_created ON tracked_messages(created_at);

  -- Counters per account, campaign ('' = all mail) and hour since the epoch (UTC). A parent account's rows count its
  -- own mail and its sub-accounts'; a sub-account's rows its own.
  CREATE TABLE metric_rollups (
    account_id INTEGER NOT NULL,
    campaign TEXT NOT NULL,
    hour INTEGER NOT NULL,
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
    PRIMARY KEY (account_id, campaign, hour)
  ) STRICT, WITHOUT ROWID;
  `;
