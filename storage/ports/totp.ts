// Owns the TOTP port (issue 38 item 3): the second factor of console sign-in — one secret per account or for the
// operator, and the last accepted time step so a code is good once (RFC 6238 §5.2).

/** Whose secret: an account's, or (null) the operator's, which every operator token's sign-in needs. */
export type TotpOwner = number | null;

export interface TotpSecretRow {
  /** The shared secret, base32 (RFC 4648 §6) as the authenticator app was given it. */
  secret: string;
  /** The last time step a code was accepted for; null before the first sign-in. */
  last_step: number | null;
  created_at: number;
}

export interface TotpStore {
  /** Enrols `owner` with `secret`, replacing an earlier secret (and forgetting its last step). */
  enroll(owner: TotpOwner, secret: string, now: number): Promise<void>;
  find(owner: TotpOwner): Promise<TotpSecretRow | undefined>;
  /**
   * Records `step` as used when it is later than the last one accepted — atomically, so two sign-ins with one code
   * on two nodes cannot both pass. False: it (or a later one) was used already, or `owner` is not enrolled.
   */
  useStep(owner: TotpOwner, step: number): Promise<boolean>;
  /** Removes the secret; false when there was none. */
  disable(owner: TotpOwner): Promise<boolean>;
}

/** The row key of an owner's secret. */
export const totpSubject = (owner: TotpOwner) => (owner === null ? 'operator' : `account:${owner}`);
