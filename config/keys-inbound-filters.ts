// Owns the configuration keys of inbound filtering beyond the spam threshold and rspamd: the statistical
// classifier (filters.bayes.*); mounted into KEY_TREE by config/keys.ts.
import { key, type KeyTree } from './key-def.js';
import { integer } from './values.js';

/** `filters.bayes.*`: the classifier that learns (filters/bayes.ts). */
export const BAYES_KEYS = {
  minLearned: key({
    doc: 'Learned spam and learned ham messages (each) the classifier needs, its global model and the account\'s together, before it scores mail; below it abstains (a fresh install until trained with sluice filter train).',
    defaultText: '200',
    default: () => 200,
    parse: integer(1, 1_000_000, 'a count'),
  }),
} satisfies KeyTree;
