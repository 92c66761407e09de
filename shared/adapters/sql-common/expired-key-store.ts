/**
 * What the two SQL adapters share of removing exactly once's expired keys (CONTRACT 5a): the call
 * and the reading of its answer. No SQL text of either dialect lives here; each adapter passes its own.
 */
import { type Database, DatabaseStatementError } from '../../core/database.js';
import type { ExpiredKeyStore } from '../../core/idempotency-retention.js';

/** A dialect's statement of the clean-up. */
export interface ExpiredKeyStatements {
  /** Removes expired records of `SVC_IDEMPOTENCY`, at most parameter 1 of them; one row `removed`. */
  readonly removeExpired: string;
  /** Error codes that say the table is not there (the scripts were not applied). */
  readonly missingObject: ReadonlySet<string>;
}

/** The expired keys of a database, in the statement of its dialect. */
export function createSqlExpiredKeyStore(
  db: Pick<Database, 'query'>,
  sql: ExpiredKeyStatements,
): ExpiredKeyStore {
  return {
    async removeExpired(limit) {
      try {
        const rows = await db.query(sql.removeExpired, [limit]);
        return Number(rows[0]?.removed ?? 0);
      } catch (error) {
        if (error instanceof DatabaseStatementError && sql.missingObject.has(error.dbCode ?? ''))
          return undefined;
        throw error;
      }
    },
  };
}
