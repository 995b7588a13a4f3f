// Owns the suppression decision: a matching suppression entry drops the recipient before any delivery attempt.
import type { SuppressionRow } from '../storage/ports/suppressions.js';

export type SuppressionVerdict =
  | { action: 'pass' }
  | { action: 'drop'; reason: string; status: string };

/**
 * `drop` with reason `suppressed:<source>` when an entry matched. Status 5.7.1 ("delivery not authorized", RFC 3463)
 * is what the `dropped` event reports: the sender's own list refuses the recipient.
 */
export function decideSuppression(match: SuppressionRow | undefined): SuppressionVerdict {
  if (!match) return { action: 'pass' };
  return { action: 'drop', reason: `suppressed:${match.source}`, status: '5.7.1' };
}
