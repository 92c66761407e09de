import { createEmbeddedExpiredKeyStore } from '../adapters/embedded/expired-key-store.js';
import { createMssqlExpiredKeyStore } from '../adapters/mssql/expired-key-store.js';
import { byDialect } from '../config/databases.js';
import type { Database } from '../core/database.js';
import { type ExpiredKeyStore, removeExpiredKeys } from '../core/idempotency-retention.js';
import { describeError } from '../core/log.js';
import { reportPermissionDenied, serviceLog } from './observability.js';

/** Exactly once's expired keys of a database, in its dialect. */
export function expiredKeyStore(db: Database): ExpiredKeyStore {
  return byDialect(db, { mssql: createMssqlExpiredKeyStore, embedded: createEmbeddedExpiredKeyStore });
}

/**
 * The keys' part of the scheduled clean-up (CONTRACT 5a): each database once, whichever tenants it
 * serves (they share its keys' table, and each record carries its own expiry), one log line per
 * database naming its tenants. A database without the table yet (its scripts not applied) is
 * logged and passed over; one that fails is logged as an error and counted, and the others go on.
 */
export async function removeExpiredKeysOfDatabases(
  databases: ReadonlyMap<Database, readonly string[]>,
  now?: () => number,
): Promise<{ removed: number; failed: number }> {
  let removed = 0;
  let failed = 0;
  for (const [db, tenants] of databases) {
    try {
      const outcome = await removeExpiredKeys(expiredKeyStore(db), { now });
      if ('missingTable' in outcome) {
        serviceLog().warn(
          'idempotency retention: the database has no dbo.SVC_IDEMPOTENCY (run npm run db:apply on it)',
          { tenants },
        );
        continue;
      }
      removed += outcome.removed;
      serviceLog().info('idempotency retention', { tenants, ...outcome });
    } catch (error) {
      failed++;
      reportPermissionDenied(error, { tenant: tenants[0], tenants });
      serviceLog().error('idempotency retention failed', { tenants, ...describeError(error) });
    }
  }
  return { removed, failed };
}
