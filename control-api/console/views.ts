// Owns the list of console views, in one place (a new view adds its routes here and its entry to NAV in layout.ts).
import { deliverabilityViews } from './views-deliverability.js';
import { domainViews } from './views-domains.js';
import { listViews } from './views-lists.js';
import { logViews } from './views-log.js';
import { inboundLogViews } from './views-inbound-log.js';
import { quarantineViews } from './views-quarantine.js';
import { queueViews } from './views-queue.js';
import { recipientViews } from './views-recipients.js';
import { senderViews } from './views-senders.js';
import type { ViewRoute } from './view.js';
import { webhookViews } from './views-webhooks.js';

export const CONSOLE_VIEWS: readonly ViewRoute[] = [
  ...queueViews,
  ...quarantineViews,
  ...logViews,
  ...deliverabilityViews,
  ...domainViews,
  ...recipientViews,
  ...listViews,
  ...inboundLogViews,
  ...webhookViews,
  ...senderViews,
];
