// Owns the `inbound.*` keys of the quarantine, reports, lists and quarantine digests; mounted into KEY_TREE by
// config/keys.ts beside greylisting and ARC (config/keys-inbound-filters.ts).
import { key } from './key-def.js';
import { integer, parseAccountHandle, parseDays, parseEmail } from './values.js';

export const INBOUND_KEYS = {
  quarantineDays: key({
    doc: 'Days a quarantined message is kept; an unreleased message is never pruned before then.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  reportsPerAccount: key({
    doc: 'Reports (POST /inbound/v1/report, each its first 320 KiB) kept per account; a new one past it deletes the account\'s oldest.',
    defaultText: '100',
    default: () => 100,
    parse: integer(1, 100_000, 'a count'),
  }),
  listEntriesPerAccount: key({
    doc: 'Safelist and blocklist entries one account holds at all its levels (account, domains, recipients) together; adding a new one past it answers 409.',
    defaultText: '10000',
    default: () => 10_000,
    parse: integer(1, 10_000_000, 'a count'),
  }),
  digestFrom: key({
    live: true,
    doc: 'From address of quarantine digests (each protected domain\'s quarantineDigest setting says how often its recipients get one). Digests go out as Sluice\'s own mail (null sender) to the domain\'s downstream servers, DKIM-signed with inbound.digest_account\'s key for the From domain.',
    defaultText: 'quarantine@ + smtp.hostname',
    default: () => undefined,
    parse: (raw: unknown) => parseEmail(raw),
  }),
  digestAccount: key({
    live: true,
    doc: 'Handle of the account whose active DKIM key for the From domain of inbound.digest_from signs quarantine digests. Without such a key a digest goes out unsigned, with a warning in the log.',
    defaultText: 'default',
    default: () => 'default',
    parse: parseAccountHandle,
  }),
};
