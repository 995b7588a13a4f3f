// Owns PostgreSQL migration 7: each classifier model records the tokeniser its messages were learned with, as
// SQLite's migration 31 (NULL: learned before the version was recorded, which is version 1).
export const BAYES_TOKENIZER_SCHEMA = `
  ALTER TABLE bayes_models ADD COLUMN tokenizer integer;
`;
