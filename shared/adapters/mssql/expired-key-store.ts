/** Exactly once's expired keys in T-SQL (infra/sql/mssql/service/090-idempotency.sql). */
import type { Database } from '../../core/database.js';
import type { ExpiredKeyStore } from '../../core/idempotency-retention.js';
import { createSqlExpiredKeyStore, type ExpiredKeyStatements } from '../sql-common/expired-key-store.js';

export const MSSQL_EXPIRED_KEY_STATEMENTS: ExpiredKeyStatements = {
  // TOP: a batch of row locks (IX_SVC_IDEMPOTENCY_EXPIRES finds them), never the table's lock.
  removeExpired: `DELETE TOP (@p1) FROM dbo.SVC_IDEMPOTENCY WHERE EXPIRES_AT < SYSUTCDATETIME();
    SELECT @@ROWCOUNT AS removed;`,
  // 208: invalid object name (SVC_IDEMPOTENCY missing).
  missingObject: new Set(['208']),
};

/** The expired keys of a SQL Server (or T-SQL engine) database. */
export function createMssqlExpiredKeyStore(db: Pick<Database, 'query'>): ExpiredKeyStore {
  return createSqlExpiredKeyStore(db, MSSQL_EXPIRED_KEY_STATEMENTS);
}
