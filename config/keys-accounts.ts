// Owns the keys that bound what one account keeps (issue 31, bounded storage per tenant): suppressions, live
// sub-accounts, custom tracking domains and DKIM keys per account.
import { key } from './key-def.js';
import { integer } from './values.js';

/**
 * `accounts.max_suppressions`, `accounts.max_sub_accounts`, `accounts.max_deleted_sub_accounts`,
 * `accounts.max_tracking_domains`, `accounts.max_dkim_keys`.
 * MailChannels documents no bound on any; these keep one tenant's rows (each read on every send, listed by the console, or matched by Host
 * on every tracking hit) from growing without end.
 */
export const ACCOUNT_KEYS = {
  maxSuppressions: key({
    doc: 'Suppression-list entries one account holds; a POST adding more answers 422 and stores nothing. A hard bounce, unsubscribe or complaint past it is still recorded: it replaces the account\'s oldest hard-bounce entry, or (none left) goes over the bound.',
    defaultText: '100000',
    default: () => 100_000,
    parse: integer(1, 100_000_000, 'a count'),
  }),
  maxSubAccounts: key({
    doc: 'Live (not deleted) sub-accounts one parent holds, suspended ones included; creating more answers 422.',
    defaultText: '1000',
    default: () => 1000,
    parse: integer(1, 1_000_000, 'a count'),
  }),
  maxDeletedSubAccounts: key({
    doc: 'Deleted sub-accounts one parent keeps until retention purges them (retention.log_days after deletion, once no log, event, message, metric, report or inbound domain names them); creating a sub-account past it answers 422.',
    defaultText: '10000',
    default: () => 10_000,
    parse: integer(1, 10_000_000, 'a count'),
  }),
  maxTrackingDomains: key({
    doc: 'Custom tracking domains (each hostname and scope, any status) one account registers; registering more answers 422.',
    defaultText: '100',
    default: () => 100,
    parse: integer(1, 100_000, 'a count'),
  }),
  maxDkimKeys: key({
    doc: 'DKIM keys one account holds, every domain and status together; creating or rotating past it answers 422. Retired and revoked keys count until retention.dkim_key_days prunes them.',
    defaultText: '1000',
    default: () => 1000,
    parse: integer(1, 1_000_000, 'a count'),
  }),
};
