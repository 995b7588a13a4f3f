// Owns the list of console views, in one place (a new view adds its routes here and its entry to NAV in layout.ts).
import { deliverabilityViews } from './views-deliverability.js';
import { domainViews } from './views-domains.js';
import { domainEditViews } from './views-domain-edit.js';
import { listViews } from './views-lists.js';
import { logViews } from './views-log.js';
import { monitorViews } from './views-monitors.js';
import { auditViews } from './views-audit.js';
import { overviewViews } from './views-overview.js';
import { inboundLogViews } from './views-inbound-log.js';
import { quarantineViews } from './views-quarantine.js';
import { queueViews } from './views-queue.js';
import { recipientViews } from './views-recipients.js';
import { senderViews } from './views-senders.js';
import type { ViewRoute } from './view.js';
import { webhookViews } from './views-webhooks.js';
import { keyViews } from './views-keys.js';
import { passwordViews } from './views-passwords.js';
import { subAccountViews } from './views-subaccounts.js';
import { suppressionViews } from './views-suppressions.js';
import { lockdownViews } from './views-lockdown.js';

export const CONSOLE_VIEWS: readonly ViewRoute[] = [
  ...overviewViews,
  ...queueViews,
  ...quarantineViews,
  ...logViews,
  ...deliverabilityViews,
  ...domainViews,
  ...domainEditViews,
  ...recipientViews,
  ...listViews,
  ...inboundLogViews,
  ...webhookViews,
  ...senderViews,
  ...keyViews,
  ...passwordViews,
  ...subAccountViews,
  ...suppressionViews,
  ...lockdownViews,
  ...monitorViews,
  ...auditViews,
];
