// Owns how an audit entry's "who" reads (the console's view, `sluice audit`): one wording for every listing.
import type { AuditActorKind } from '../../storage/ports/audit.js';

/** `key 12`, `operator (token 3)`, `cli user root`. */
export function actorLabel(kind: AuditActorKind, actor: string): string {
  return kind === 'key' ? (/^\d/.test(actor) ? `key ${actor}` : actor) : kind === 'operator' ? `operator (${actor})` : `cli user ${actor}`;
}
