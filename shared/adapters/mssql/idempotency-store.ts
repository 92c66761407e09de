/** The keys' records of CONTRACT 5a (infra/sql/mssql/service/090-idempotency.sql) in T-SQL. */
import type { Database } from '../../core/database.js';
import type { IdempotencyStore } from '../../core/idempotency.js';
import {
  createSqlIdempotencyStore,
  type IdempotencyStatements,
  type KeyLocking,
} from '../sql-common/idempotency-store.js';

const RECORD_COLUMNS = `FINGERPRINT AS fingerprint, HTTP_STATUS AS status, CONTENT_TYPE AS contentType,
    HEADERS AS headers, BODY AS body, OBJECT_KEY AS objectKey, JOURNAL_ID AS journalId`;

export const MSSQL_IDEMPOTENCY_STATEMENTS: IdempotencyStatements = {
  find: `SELECT ${RECORD_COLUMNS} FROM dbo.SVC_IDEMPOTENCY
    WHERE KEY_DIGEST = @p1 AND EXPIRES_AT > SYSUTCDATETIME()`,
  // The key is held (its lock), so the only row there can be is an expired one.
  record: `DELETE FROM dbo.SVC_IDEMPOTENCY WHERE KEY_DIGEST = @p1;
    INSERT INTO dbo.SVC_IDEMPOTENCY (KEY_DIGEST, TENANT, FINGERPRINT, HTTP_STATUS, CONTENT_TYPE, HEADERS,
        BODY, OBJECT_KEY, JOURNAL_ID, EXPIRES_AT)
      VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, DATEADD(hour, @p10, SYSUTCDATETIME()))`,
  forget: 'DELETE FROM dbo.SVC_IDEMPOTENCY WHERE KEY_DIGEST = @p1',
};

/**
 * The key's application lock, owned by the transaction (given back by its commit, its rollback or
 * the session's end: a call killed half-way leaves no lock behind), taken without waiting. A
 * negative result is "not granted": SQL Server answers -1 for a time-out, the T-SQL engine -999.
 */
const LOCK_KEY = `DECLARE @result int;
  EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 0;
  SELECT @result AS result`;

const MSSQL_KEY_LOCKING: KeyLocking = {
  async lockInTransaction(tx, digest) {
    const rows = await tx.query(LOCK_KEY, [`svc-idempotency:${digest}`]);
    return Number(rows[0]?.result) >= 0;
  },
};

/** A tenant's keys' records on its SQL Server database. */
export function createMssqlIdempotencyStore(db: Database, tenant: string): IdempotencyStore {
  return createSqlIdempotencyStore(db, MSSQL_IDEMPOTENCY_STATEMENTS, MSSQL_KEY_LOCKING, tenant);
}
