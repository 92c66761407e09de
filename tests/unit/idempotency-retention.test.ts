import { describe, expect, it } from 'vitest';
import {
  EXPIRED_KEYS_BATCH,
  type ExpiredKeyStore,
  removeExpiredKeys,
} from '../../shared/core/idempotency-retention.js';

/** A store holding `expired` records, that removes up to the limit asked each time; its calls. */
function storeOf(expired: number | undefined) {
  let left = expired;
  const limits: number[] = [];
  const store: ExpiredKeyStore = {
    async removeExpired(limit) {
      limits.push(limit);
      if (left === undefined) return undefined;
      const removed = Math.min(limit, left);
      left -= removed;
      return removed;
    },
  };
  return { store, limits };
}

describe('Function: removeExpiredKeys', () => {
  it('removes in batches of 1000 until one comes back short', async () => {
    const { store, limits } = storeOf(2500);
    expect(await removeExpiredKeys(store)).toEqual({ removed: 2500, more: false });
    expect(limits).toEqual([EXPIRED_KEYS_BATCH, EXPIRED_KEYS_BATCH, EXPIRED_KEYS_BATCH]);
    expect(EXPIRED_KEYS_BATCH).toBe(1000);
  });

  it('asks once more after an exactly full batch, and once when nothing has expired', async () => {
    const full = storeOf(2000);
    expect(await removeExpiredKeys(full.store)).toEqual({ removed: 2000, more: false });
    expect(full.limits).toHaveLength(3);
    const none = storeOf(0);
    expect(await removeExpiredKeys(none.store)).toEqual({ removed: 0, more: false });
    expect(none.limits).toHaveLength(1);
  });

  it('stops after a full batch once its time budget is spent, saying more are left for the next run', async () => {
    let clock = 0;
    const { store, limits } = storeOf(10_000);
    const slow: ExpiredKeyStore = {
      async removeExpired(limit) {
        clock += 25_000;
        return store.removeExpired(limit);
      },
    };
    expect(await removeExpiredKeys(slow, { now: () => clock, budgetMs: 60_000 })).toEqual({
      removed: 3000,
      more: true,
    });
    expect(limits).toHaveLength(3);
  });

  it("answers a database without the keys' table as such, and passes other failures on", async () => {
    expect(await removeExpiredKeys(storeOf(undefined).store)).toEqual({ missingTable: true });
    const failing: ExpiredKeyStore = { removeExpired: () => Promise.reject(new Error('unreachable')) };
    await expect(removeExpiredKeys(failing)).rejects.toThrow('unreachable');
  });
});
