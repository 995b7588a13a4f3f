// Owns the key of the outbound-connection policy (filters/target-policy.ts): what tenant-chosen targets may reach.
import { key } from './key-def.js';
import { parseAllowTargets } from './values.js';

/** `security.allow_private_targets`. */
export const SECURITY_KEYS = {
  allowPrivateTargets: key({
    live: true,
    doc: 'Exceptions to the refusal of internal targets for webhooks, monitor webhooks, inbound downstreams and MX hosts: CIDR networks (10.0.0.0/8) or address:port ([::1]:2525); only an address:port entry opens one of Sluice\'s own listeners.',
    defaultText: 'empty',
    default: (): string[] => [],
    parse: parseAllowTargets,
  }),
};
