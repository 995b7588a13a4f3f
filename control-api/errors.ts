// Owns turning every control-plane error into the body shape of its API group (the only place that does).
import http from 'node:http';

/** Which API a path belongs to; each has its own error body shape (api.md). */
export type Group = 'tx' | 'inbound' | 'outbound' | 'notifications' | 'root';

/** The group of a request path, by prefix. */
export function groupOf(path: string): Group {
  if (path === '/tx/v1' || path.startsWith('/tx/v1/')) return 'tx';
  if (path === '/inbound/v1' || path.startsWith('/inbound/v1/')) return 'inbound';
  if (path === '/outbound/v1' || path.startsWith('/outbound/v1/')) return 'outbound';
  if (path === '/notifications/v1' || path.startsWith('/notifications/v1/')) return 'notifications';
  return 'root';
}

/** An error to answer with: status, client-facing messages (no internals), optional headers. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: string[],
    readonly headers: Record<string, string> = {},
  ) {
    super(errors.join('; '));
    this.name = 'ApiError';
  }
}

/**
 * The error body for a group: `{"errors":[…]}` for /tx/v1 (OAS-E ErrorResponse) and the other groups, and
 * `{"code":<status>,"errors":[…],"message":"…"}` for /inbound/v1 and /outbound/v1.
 */
export function errorBody(group: Group, status: number, errors: string[]): Record<string, unknown> {
  const list = errors.length > 0 ? errors : [http.STATUS_CODES[status] ?? 'Error'];
  if (group === 'inbound' || group === 'outbound') {
    return { code: status, errors: list, message: list[0] };
  }
  return { errors: list };
}

/**
 * Seconds a client should wait after a storage failure before retrying: the server already waited up to its
 * busy_timeout (5 s) for a lock, so a quicker retry would likely meet the same lock.
 */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

/**
 * The answer to a storage failure (database locked, disk full, I/O error): 503 with Retry-After, like the MX's
 * `451 4.3.0`. The client learns only that storage is unavailable; the reason goes to the log and /healthz.
 */
export function storageUnavailable(): ApiError {
  return new ApiError(503, ['storage is temporarily unavailable; try again later'], {
    'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS),
  });
}

/** Shorthands for the common statuses. */
export const badRequest = (...errors: string[]) => new ApiError(400, errors);
export const forbidden = (...errors: string[]) => new ApiError(403, errors);
export const notFound = (...errors: string[]) => new ApiError(404, errors);
export const conflict = (...errors: string[]) => new ApiError(409, errors);

/**
 * Seconds a client should wait when the process has no room for another message (the in-memory bound
 * `smtp.max_buffered_bytes` is reached, or data_dir's disk is below `queue.min_free_bytes`): messages in progress
 * finish, or the operator frees disk, within tens of seconds — the SMTP side answers `452 4.3.1` for the same.
 */
export const NO_ROOM_RETRY_AFTER_SECONDS = 30;

/**
 * The answer when there is no room for a message (RFC 3463 4.3.1, mail system full): 503 with Retry-After, given
 * before the body is read or once the bound is met, never after anything is stored.
 */
export function noRoom(why: 'memory' | 'disk'): ApiError {
  const reason = why === 'memory' ? 'too many messages are in progress' : 'the mail spool is low on disk space';
  return new ApiError(503, [`${reason}; try again later`], { 'Retry-After': String(NO_ROOM_RETRY_AFTER_SECONDS) });
}
