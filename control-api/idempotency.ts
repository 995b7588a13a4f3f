// Owns the Idempotency-Key of send requests (issue 36; draft-ietf-httpapi-idempotency-key-header, as Stripe's): the
// key's form, the digest of the request, this process's requests in progress (409), replays and another body's 422.
import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { IdempotentAnswer, QueueStore } from '../storage/ports/queue.js';
import { ApiError } from './errors.js';

/** The answer header of a replay (the draft's examples and Stripe's). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** 1–255 printable ASCII characters (the bound: a UUID, a hash or an app's own id all fit). */
const KEY = /^[\x20-\x7e]{1,255}$/;
/** A request in progress answers 409 with this Retry-After (seconds): a send commits within about a second. */
const IN_PROGRESS_RETRY_SECONDS = 1;
/** Stored refusals: answers a retry would get again (bad input, a refusal); 429, 5xx and 413 are worth retrying. */
const KEPT_REFUSALS = new Set([400, 403, 404, 422]);

/** The key a request sent, undefined when none; 400 for a malformed one (nothing is processed). */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const v = headers['idempotency-key'];
  if (v === undefined) return undefined;
  if (Array.isArray(v) || !KEY.test(v)) throw new ApiError(400, ['Idempotency-Key must be one header of 1 to 255 printable ASCII characters']);
  return v;
}

/**
 * The request's digest: SHA-256 over its method, path, query and body bytes as sent. A retry sends the same bytes;
 * another body, another operation (send vs send-async) or another query is another request, refused under the key.
 */
export function requestHash(method: string, path: string, querystring: string): crypto.Hash {
  return crypto.createHash('sha256').update(`${method} ${path}?${querystring}\n`);
}

/** Reads the whole body into `hash` (a request whose key holds an answer is not parsed again); 413 past `limit`. */
export async function hashBody(req: IncomingMessage, hash: crypto.Hash, limit: number): Promise<string> {
  let n = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    n += chunk.length;
    if (n > limit) {
      req.resume();
      throw new ApiError(413, [`request body exceeds ${limit} bytes`]);
    }
    hash.update(chunk);
  }
  return hash.digest('hex');
}

/** One keyed request of an account: what a handler stores with its commit, and what the framework replays. */
export interface KeyedRequest {
  accountId: number;
  key: string;
  /** The request's digest (hex): known once its body was read whole. */
  digest(): string;
  /** The stored answer of `status` and `body` for this request (the digest is known once the body was read). */
  answer(status: number, body: unknown): IdempotentAnswer;
}

export interface Idempotency {
  /** Marks the key in progress in this process; 409 with Retry-After when it already is. Returns its release. */
  begin(accountId: number, key: string): () => void;
  /** The answer the account's key holds now, if any. */
  stored(accountId: number, key: string): Promise<IdempotentAnswer | undefined>;
  /** A keyed request whose body digest is `digest`. */
  keyed(accountId: number, key: string, digest: () => string): KeyedRequest;
  /**
   * Keeps a refusal of a keyed request (one a retry would get again). Resolves with the answer another request under
   * the key kept first (to give instead), else undefined (this one kept, or not a refusal to keep).
   */
  keepRefusal(k: KeyedRequest, status: number, body: unknown): Promise<IdempotentAnswer | undefined>;
}

export function createIdempotency(deps: { store: Pick<QueueStore, 'findAnswer' | 'keepAnswer'>; ttlMs: number; now: () => number }): Idempotency {
  const inProgress = new Set<string>();
  return {
    begin(accountId, key) {
      const id = `${accountId} ${key}`;
      if (inProgress.has(id)) {
        throw new ApiError(409, ['a request with this Idempotency-Key is in progress; retry after it is answered'], { 'Retry-After': String(IN_PROGRESS_RETRY_SECONDS) });
      }
      inProgress.add(id);
      return () => void inProgress.delete(id);
    },
    stored: (accountId, key) => deps.store.findAnswer(accountId, key, deps.now()),
    keyed(accountId, key, digest) {
      return {
        accountId,
        key,
        digest,
        answer(status, body) {
          const at = deps.now();
          return { accountId, key, digest: digest(), status, body: JSON.stringify(body), createdAt: at, expiresAt: at + deps.ttlMs };
        },
      };
    },
    async keepRefusal(k, status, body) {
      if (!KEPT_REFUSALS.has(status)) return undefined;
      const mine = k.answer(status, body);
      const kept = await deps.store.keepAnswer(mine);
      return kept.createdAt === mine.createdAt && kept.digest === mine.digest && kept.body === mine.body ? undefined : kept;
    },
  };
}

/**
 * The answer to a request whose key holds `a`: the stored one again when the digests match (RFC-draft §2.6: the
 * same status and body), else 422 naming the key (another request under a key already used).
 */
export function replay(a: IdempotentAnswer, digest: string): { status: number; body: string; headers: Record<string, string> } {
  if (a.digest !== digest) {
    throw new ApiError(422, [`Idempotency-Key ${JSON.stringify(a.key)} was used for another request: a retry must send the same request; use a new key for a new one`]);
  }
  return { status: a.status, body: a.body, headers: { [REPLAYED_HEADER]: 'true' } };
}
