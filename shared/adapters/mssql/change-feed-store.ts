/** The change feed's store in T-SQL (infra/sql/mssql/service/050-change-feed.sql installs what it reads). */
import type { ChangeFeedStore } from '../../core/data-api/changes.js';
import { REMOVED_COLUMN } from '../../core/data-api/changes.js';
import type { Database, DataSourceInfo } from '../../core/database.js';
import {
  changedRowParts,
  changeTableName,
  createSqlChangeFeedStore,
} from '../sql-common/change-feed-store.js';
import { mssqlDialect } from './dialect.js';

const q = mssqlDialect.quoteIdent;
const changes = (source: Pick<DataSourceInfo, 'schema' | 'name'>) =>
  `${q(source.schema)}.${q(changeTableName(source))}`;
const FEED_ROW = 'dbo.SVC_CHANGE_FEED WHERE SOURCE_SCHEMA = @p1 AND SOURCE_NAME = @p2';
const STATE = `SELECT CAST(FEED_ID AS nvarchar(36)) AS feedId, LAST_BATCH AS lastBatch, REMOVED_TO_BATCH AS removedToBatch FROM ${FEED_ROW}`;

/** Statements in one transaction that is rolled back, and the error passed on, when one fails. */
const inTransaction = (statements: string) => `BEGIN TRY
      BEGIN TRANSACTION;
      ${statements}
      COMMIT TRANSACTION;
    END TRY
    BEGIN CATCH
      IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
      THROW;
    END CATCH;`;

/**
 * The stamp in one round trip. The feed row's update lock serialises stamps; READPAST leaves the
 * change rows that an open transaction still holds (under locking READ COMMITTED; under
 * READ_COMMITTED_SNAPSHOT and on PostgreSQL they are not visible to the update at all) for a
 * later stamp, after their commit. Nested IFs: the change table is named only once the feed row
 * says it exists.
 */
function stamp(source: DataSourceInfo): string {
  return `
IF EXISTS (SELECT 1 FROM ${FEED_ROW})
BEGIN
  IF EXISTS (SELECT 1 FROM ${changes(source)} WITH (READPAST) WHERE BATCH IS NULL)
  BEGIN
    DECLARE @batch bigint;
    ${inTransaction(`UPDATE ${FEED_ROW.replace('dbo.SVC_CHANGE_FEED', 'dbo.SVC_CHANGE_FEED SET LAST_BATCH = LAST_BATCH + 1')};
      SELECT @batch = LAST_BATCH FROM ${FEED_ROW};
      UPDATE ${changes(source)} WITH (READPAST) SET BATCH = @batch, STAMPED_AT = SYSUTCDATETIME() WHERE BATCH IS NULL;`)}
  END;
END;
${STATE}`;
}

/** `(a, b) > (x, y)` spelled out (T-SQL has no row comparison), parameters from `first`. */
function afterKey(keys: readonly string[], first: number): string {
  const param = (index: number) => `@p${first + index}`;
  const terms = keys.map((key, index) =>
    [...keys.slice(0, index).map((k, i) => `${k} = ${param(i)}`), `${key} > ${param(index)}`].join(' AND '),
  );
  return terms.length === 1 ? terms[0]! : `(${terms.map((t) => `(${t})`).join(' OR ')})`;
}

/**
 * The changed keys of a range of batches, each once, the page's worth in key order, then each
 * key's current row (none: deleted). The key's values come from the change table, so that a
 * tombstone carries them.
 */
function readChanges(source: DataSourceInfo, after: boolean): string {
  const { keys, columns, on, order } = changedRowParts(source, q);
  const rowsParam = `@p${3 + (after ? keys.length : 0)}`;
  const where = `BATCH > @p1 AND BATCH <= @p2${after ? ` AND ${afterKey(keys, 3)}` : ''}`;
  return (
    `SELECT ${columns}, CASE WHEN current_row.${keys[0]} IS NULL THEN 1 ELSE 0 END AS ${q(REMOVED_COLUMN)} ` +
    `FROM (SELECT DISTINCT ${keys.join(', ')} FROM ${changes(source)} WHERE ${where} ` +
    `ORDER BY ${keys.join(', ')} OFFSET 0 ROWS FETCH NEXT ${rowsParam} ROWS ONLY) AS changed ` +
    `LEFT JOIN ${q(source.schema)}.${q(source.name)} AS current_row ON ${on} ` +
    `ORDER BY ${order}`
  );
}

/** The retention clean-up: the last batch stamped before the time, marked removed, then deleted. */
function remove(source: DataSourceInfo): string {
  return `
DECLARE @cut bigint, @removed int = 0;
SELECT @cut = MAX(BATCH) FROM ${changes(source)} WHERE BATCH IS NOT NULL AND STAMPED_AT < @p3;
IF @cut IS NOT NULL
BEGIN
  ${inTransaction(`UPDATE dbo.SVC_CHANGE_FEED SET REMOVED_TO_BATCH = @cut
      WHERE SOURCE_SCHEMA = @p1 AND SOURCE_NAME = @p2 AND REMOVED_TO_BATCH < @cut;
    DELETE FROM ${changes(source)} WHERE BATCH <= @cut;
    SET @removed = @@ROWCOUNT;`)}
END;
SELECT @removed AS removed;`;
}

/** The writers' traces of a range of batches (the index on BATCH finds the range). */
const writers = (source: Pick<DataSourceInfo, 'schema' | 'name'>) =>
  `SELECT DISTINCT TOP (@p3) TRACEPARENT AS traceparent FROM ${changes(source)} ` +
  'WHERE BATCH > @p1 AND BATCH <= @p2 AND TRACEPARENT IS NOT NULL';

/** The change feed on a SQL Server (or T-SQL engine) database. */
export function createMssqlChangeFeedStore(db: Database): ChangeFeedStore {
  return createSqlChangeFeedStore(db, {
    state: STATE,
    stamp,
    readChanges,
    remove,
    writers,
    // 208: invalid object name (SVC_CHANGE_FEED missing: the scripts were not applied).
    missingObject: new Set(['208']),
  });
}
