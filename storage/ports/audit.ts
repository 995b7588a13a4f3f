// Owns the audit port (issue 38 item 3): who changed what through the API, the console or the CLI — append, list
// (newest first, by account, time and a cursor) and retention's prune.

/** Where a change came in. */
export type AuditVia = 'api' | 'console' | 'cli';
/** Who made it: an API key (REST, or a tenant's console session), the operator (console token) or a CLI user. */
export type AuditActorKind = 'key' | 'operator' | 'cli';

/** One change to record. Never a request body, a secret or a credential: the route template and the target's id. */
export interface AuditEntry {
  at: number;
  via: AuditVia;
  actorKind: AuditActorKind;
  /** The key id as text (kind key), `token <id>` (operator), the OS user name (cli). */
  actor: string;
  /** The account the change was made as or on; null for an operator's change that names none. */
  accountId: number | null;
  /** The API key the change was made with (REST, a tenant's console session); null otherwise. */
  keyId: number | null;
  /** `POST /tx/v1/sub-account/{handle}/api-key` or the CLI command (`keys revoke`). */
  action: string;
  /** The id of what was changed (the path's parameters, a CLI command's --account/--id…), when there is one. */
  target: string | null;
  /** The client's address; `local` for the CLI. */
  address: string;
  /** The HTTP status of the answer; for the CLI its exit code (0). */
  status: number;
}

export interface AuditRow extends AuditEntry {
  id: number;
}

export interface AuditFilter {
  /** Only this account's entries; with `withSubAccounts`, its sub-accounts' too. Undefined: every entry (operator). */
  accountId?: number;
  withSubAccounts?: boolean;
  /** Entries at or after `since`, before `until` (ms). */
  since?: number;
  until?: number;
  /** Cursor: entries with an id below this (the last id of the previous page). */
  before?: number;
  limit: number;
}

export interface AuditStore {
  append(entry: AuditEntry): Promise<void>;
  /** Matching entries, newest first (by id), at most `limit`. */
  list(filter: AuditFilter): Promise<AuditRow[]>;
  /** Deletes up to `limit` entries older than `before` (retention.log_days); returns how many. */
  prune(before: number, limit: number): Promise<number>;
}
