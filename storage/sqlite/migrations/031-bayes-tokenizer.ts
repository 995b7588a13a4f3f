// Owns the SQL of migration 31: each classifier model records the tokeniser its messages were learned with.
// NULL: learned before the version was recorded, which is version 1 (storage/ports/bayes.ts FIRST_TOKENIZER).
export const BAYES_TOKENIZER = `
  ALTER TABLE bayes_models ADD COLUMN tokenizer INTEGER;
  `;
