// Owns the SQL of migration 36 (issue 35): activations of reply-driven shaping rules, per sending address and provider.
export const SHAPING = `
  CREATE TABLE shaping (
    source TEXT NOT NULL,
    provider TEXT NOT NULL,
    rule TEXT NOT NULL,
    action TEXT NOT NULL,
    rate INTEGER NOT NULL,
    reason TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    until INTEGER NOT NULL,
    PRIMARY KEY (source, provider)
  );
  CREATE INDEX shaping_until ON shaping (until);
  `;
