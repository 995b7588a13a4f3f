// Owns the SQL of migration 11 (user_version 11): outbound abuse control — scan policies, strikes, blocks, delistings.
// 11: per-account outbound scanning policy (overrides filters.outbound_policy); the CONFIRMED/SUSPECT messages of
// each sender identity (strikes, counted toward a block); the blocks themselves (one row per identity, lifted by a
// delisting); and every delisting (the API's are rate-limited per identity).
export const SENDER_ABUSE = `
  CREATE TABLE account_scan_policies (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id),
    policy TEXT NOT NULL CHECK (policy IN ('enforce', 'monitor', 'off')),
    updated_at INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE sender_strikes (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    sender_id TEXT NOT NULL,             -- account|x-authuser|user
    kind TEXT NOT NULL CHECK (kind IN ('confirmed', 'suspect')),
    message_id TEXT NOT NULL,            -- Message-ID of the message that earned it
    at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX sender_strikes_sender ON sender_strikes(account_id, sender_id, at);
  CREATE INDEX sender_strikes_at ON sender_strikes(at);

  -- One row per identity ever blocked: blocked while lifted_at IS NULL; a new block overwrites a lifted one.
  CREATE TABLE sender_blocks (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    sender_id TEXT NOT NULL,
    envelope_sender TEXT NOT NULL,       -- MAIL FROM of the message that crossed the limit ('' = <>)
    message_id TEXT NOT NULL,            -- that message's Message-ID
    reason TEXT NOT NULL,
    blocked_at INTEGER NOT NULL,
    lifted_at INTEGER,
    lifted_by TEXT CHECK (lifted_by IN ('api', 'operator')),
    PRIMARY KEY (account_id, sender_id)
  ) STRICT;
  CREATE INDEX sender_blocks_active ON sender_blocks(account_id, envelope_sender COLLATE NOCASE) WHERE lifted_at IS NULL;

  CREATE TABLE sender_delistings (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    sender_id TEXT NOT NULL,
    via TEXT NOT NULL CHECK (via IN ('api', 'operator')),
    at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX sender_delistings_sender ON sender_delistings(account_id, sender_id, at);
  CREATE INDEX sender_delistings_at ON sender_delistings(at);
  `;
