// Owns the Settings port: named values every process on one store shares (first-start marks, signing secrets).
import crypto from 'node:crypto';

/** Named settings, shared by every process (and, later, every node) on the store. */
export interface SettingStore {
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
  /** Removes `name` (nothing when it is not there): a pending ACME token once its challenge is done. */
  delete(name: string): Promise<void>;
  /**
   * The value of `name`, storing `make()` first when there is none — atomically, so processes starting together
   * agree on one value (a signing secret made once per store).
   */
  getOrCreate(name: string, make: () => string): Promise<string>;
}

/**
 * A signing secret kept in settings under `name` (unsubscribe, tracking and return path tokens): 32 random bytes made
 * once per store, so every process and node on it, and every restart, verifies the tokens already sent.
 */
export async function secretSetting(settings: SettingStore, name: string): Promise<Buffer> {
  return Buffer.from(await settings.getOrCreate(name, () => crypto.randomBytes(32).toString('base64')), 'base64');
}
