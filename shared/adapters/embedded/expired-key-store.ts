/** Exactly once's expired keys on the embedded database (infra/sql/embedded/090-idempotency.sql). */
import type { Database } from '../../core/database.js';
import type { ExpiredKeyStore } from '../../core/idempotency-retention.js';
import { createSqlExpiredKeyStore, type ExpiredKeyStatements } from '../sql-common/expired-key-store.js';

export const EMBEDDED_EXPIRED_KEY_STATEMENTS: ExpiredKeyStatements = {
  // PostgreSQL's DELETE has no LIMIT: the batch's keys by IX_SVC_IDEMPOTENCY_EXPIRES, then those.
  removeExpired: `WITH gone AS (
      DELETE FROM dbo."SVC_IDEMPOTENCY" WHERE "KEY_DIGEST" IN (
        SELECT "KEY_DIGEST" FROM dbo."SVC_IDEMPOTENCY" WHERE "EXPIRES_AT" < (now() AT TIME ZONE 'utc') LIMIT $1)
      RETURNING 1)
    SELECT count(*)::int AS removed FROM gone`,
  // 42P01: undefined table (SVC_IDEMPOTENCY missing).
  missingObject: new Set(['42P01']),
};

/** The expired keys of the embedded database. */
export function createEmbeddedExpiredKeyStore(db: Pick<Database, 'query'>): ExpiredKeyStore {
  return createSqlExpiredKeyStore(db, EMBEDDED_EXPIRED_KEY_STATEMENTS);
}
