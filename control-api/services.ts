// Owns the set of services the control-plane routes receive (wired in bin/, injected here; no globals).
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { AccountStore } from '../storage/accounts.js';

/** Health of the parts /healthz reports on. */
export interface HealthReport {
  storage: boolean;
  listeners: Record<string, boolean>;
}

export interface Services {
  config: Config;
  accounts: AccountStore;
  /** Injected clock (ms since epoch). */
  now: () => number;
  logger: Logger;
  health: () => HealthReport;
}
