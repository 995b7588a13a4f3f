// Owns what the API has no route for but the console manages, over the same store functions as `sluice keys`,
// `sluice smtp-passwords` and `sluice lockdown` (bin/cli-accounts.ts): an account's own API keys and SMTP passwords
// (the /tx/v1/sub-account routes reach only a parent's sub-accounts) and the operator's lockdown allow-list.
import { domainToASCII } from 'node:url';
import { CREDENTIAL_LIMIT, type AccountStore, type ApiKeyRow, type KeyScope, type SmtpPasswordRow } from '../storage/ports/accounts.js';
import type { LockdownStore } from '../storage/ports/lockdown.js';
import { ApiError, badRequest, notFound } from './errors.js';

/** A new API key of `scope` for the account; 422 past CREDENTIAL_LIMIT live keys, as the sub-account route. */
export async function createOwnKey(accounts: AccountStore, accountId: number, scope: KeyScope, now: number): Promise<{ id: number; key: string }> {
  const res = await accounts.createApiKey(accountId, scope, now);
  if (!res.ok) throw new ApiError(422, [`the account has reached the limit of ${CREDENTIAL_LIMIT} API keys; revoke one first`]);
  return res.value;
}

/** The account's live API keys, redacted, in the order they were created (at most CREDENTIAL_LIMIT). */
export function listOwnKeys(accounts: AccountStore, accountId: number): Promise<ApiKeyRow[]> {
  return accounts.listApiKeys(accountId, CREDENTIAL_LIMIT, 0);
}

/** Revokes one live key of the account; 404 when it has none with that id. */
export async function revokeOwnKey(accounts: AccountStore, accountId: number, id: number, now: number): Promise<void> {
  if (!await accounts.revokeApiKey(accountId, id, now)) throw notFound(`API key ${id} not found`);
}

/** A new SMTP password for the account (its user name is the account's handle); 422 past CREDENTIAL_LIMIT. */
export async function createOwnPassword(accounts: AccountStore, accountId: number, now: number): Promise<{ id: number; password: string }> {
  const res = await accounts.createSmtpPassword(accountId, now);
  if (!res.ok) throw new ApiError(422, [`the account has reached the limit of ${CREDENTIAL_LIMIT} SMTP passwords; delete one first`]);
  return res.value;
}

/** The account's live SMTP passwords, redacted. */
export function listOwnPasswords(accounts: AccountStore, accountId: number): Promise<SmtpPasswordRow[]> {
  return accounts.listSmtpPasswords(accountId);
}

/** Deletes one SMTP password of the account; 404 when it has none with that id. */
export async function deleteOwnPassword(accounts: AccountStore, accountId: number, id: number, now: number): Promise<void> {
  if (!await accounts.deleteSmtpPassword(accountId, id, now)) throw notFound(`SMTP password ${id} not found`);
}

/** A positive integer id from a form or path, or 400. */
export function credentialId(raw: string | null | undefined): number {
  const id = Number(raw);
  if (!raw || !/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(id)) throw badRequest('id: must be a positive integer id');
  return id;
}

/**
 * A From domain as the allow-list keeps it: lower case, without the root's dot, A-labels (RFC 5891; what
 * `sluice lockdown allow` stores, so both find the same row); 400 for anything that is not a domain name.
 */
export function lockdownDomain(raw: string | null | undefined): string {
  const domain = domainToASCII((raw ?? '').trim().toLowerCase().replace(/\.$/, ''));
  // RFC 1035 §2.3.4: at most 253 characters, labels of 1-63; a From domain has at least two labels.
  if (!domain || domain.length > 253 || !/^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(domain)) {
    throw badRequest('domain: not a domain name');
  }
  return domain;
}

/** The operator authorizes `domain` for the account (a no-op when it already is). */
export async function allowDomain(allow: LockdownStore, accountId: number, raw: string | null | undefined, now: number): Promise<string> {
  const domain = lockdownDomain(raw);
  await allow.allow(accountId, domain, now);
  return domain;
}

/** Withdraws an authorization; 404 when the domain was not allowed for the account. */
export async function denyDomain(allow: LockdownStore, accountId: number, raw: string | null | undefined): Promise<string> {
  const domain = lockdownDomain(raw);
  if (!await allow.deny(accountId, domain)) throw notFound(`${domain} is not on the allow-list`);
  return domain;
}
