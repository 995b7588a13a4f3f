// Owns the SQL of migration 21: the indexes greylisting's bounds read (issue 31 finding 5).
// greylist_triplets_unretried: the prune deletes a batch of triplets never retried whose retry window is over, oldest
// first, without a scan; a passed triplet is not in it (it keeps its long lifetime, pruned by last_seen as before).
// greylist_triplets_network_new: the cap on new triplets per client network per hour counts one network's triplets
// first seen in the last hour that still wait for their retry, reading at most the cap's entries.
// Partial (passed_at IS NULL): triplets that passed, legitimate mail, add no index entries. Indexes only.
export const GREYLIST_BOUNDS = `
  CREATE INDEX greylist_triplets_unretried ON greylist_triplets(first_seen) WHERE passed_at IS NULL;
  CREATE INDEX greylist_triplets_network_new ON greylist_triplets(network, first_seen) WHERE passed_at IS NULL;
  `;
