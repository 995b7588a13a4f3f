// Owns the Settings port: named values every process on one store shares (first-start marks, signing secrets).

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
