// Owns PostgreSQL migration 12 (issue 35): activations of reply-driven shaping rules, as SQLite's migration 36.
export const SHAPING_SCHEMA = `
  CREATE TABLE shaping (
    source text NOT NULL,
    provider text NOT NULL,
    rule text NOT NULL,
    action text NOT NULL,
    rate bigint NOT NULL,
    reason text NOT NULL,
    started_at bigint NOT NULL,
    until bigint NOT NULL,
    PRIMARY KEY (source, provider)
  );
  CREATE INDEX shaping_until ON shaping (until);
`;
