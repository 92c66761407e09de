import type { IdempotencyStore, KeyRecord } from '../../shared/core/idempotency.js';

/**
 * The keys' records in memory, for unit tests of the core's use cases (the port's fake): records
 * and holds, but no transaction to roll back; the proof that effects and records commit together
 * is on the databases (tests/integration/web-api-exactly-once*.test.ts).
 */
export function memoryIdempotencyStore() {
  const records = new Map<string, KeyRecord>();
  const held = new Set<string>();
  const store: IdempotencyStore = {
    async find(digest) {
      return records.get(digest);
    },
    async hold(key) {
      if (held.has(key.digest)) return undefined;
      held.add(key.digest);
      return {
        find: async () => records.get(key.digest),
        async commit(effects) {
          const done = await effects({});
          if (done.record) records.set(key.digest, done.record);
          return done.value;
        },
        async release() {
          held.delete(key.digest);
        },
      };
    },
    async forget(digest) {
      records.delete(digest);
    },
  };
  return { store, records, held };
}
