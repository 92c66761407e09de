/**
 * Exactly once's retention (CONTRACT 5a): a key's record is kept for its tenant's
 * `idempotencyRetentionHours`, then the scheduled clean-up removes it, and the key used again is a
 * new call. Each record carries the moment it expires (written with it, from its tenant's
 * retention), so one run per database removes every tenant's expired keys at once: tenants that
 * share a database share the table.
 */

/** Port: the expired keys' records of a tenant database (the service's own table). */
export interface ExpiredKeyStore {
  /**
   * Removes at most `limit` records whose time has passed (by the database's clock, the one their
   * expiry was written by); how many it removed. Undefined when the database has no keys' table
   * (its scripts were not applied yet): nothing to remove.
   */
  removeExpired(limit: number): Promise<number | undefined>;
}

/** Records removed per statement: few enough for row locks (SQL Server escalates at about 5,000), so calls writing keys meanwhile never wait on the table. */
export const EXPIRED_KEYS_BATCH = 1000;

/** How long one database's clean-up may take in one run; what is left goes in the next. */
export const EXPIRED_KEYS_TIME_BUDGET_MS = 60_000;

/** What a database's clean-up came to. */
export type ExpiredKeysOutcome =
  /** Removed this many; `more` when the time budget ended the run with expired records left. */
  | { readonly removed: number; readonly more: boolean }
  /** The database has no keys' table: its scripts were not applied. */
  | { readonly missingTable: true };

/**
 * Removes a database's expired keys in batches of {@link EXPIRED_KEYS_BATCH}, until a batch comes
 * back short or the time budget is spent (the next run goes on from there).
 */
export async function removeExpiredKeys(
  store: ExpiredKeyStore,
  options: { readonly now?: () => number; readonly budgetMs?: number; readonly batch?: number } = {},
): Promise<ExpiredKeysOutcome> {
  const now = options.now ?? Date.now;
  const batch = options.batch ?? EXPIRED_KEYS_BATCH;
  const until = now() + (options.budgetMs ?? EXPIRED_KEYS_TIME_BUDGET_MS);
  let removed = 0;
  for (;;) {
    const count = await store.removeExpired(batch);
    if (count === undefined) return { missingTable: true };
    removed += count;
    if (count < batch) return { removed, more: false };
    if (now() >= until) return { removed, more: true };
  }
}
