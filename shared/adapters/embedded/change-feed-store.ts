/** The change feed's store in PostgreSQL (infra/sql/embedded/050-change-feed.sql installs what it reads). */
import type { ChangeFeedStore } from '../../core/data-api/changes.js';
import { REMOVED_COLUMN } from '../../core/data-api/changes.js';
import type { Database, DataSourceInfo } from '../../core/database.js';
import {
  changedRowParts,
  changeTableName,
  createSqlChangeFeedStore,
} from '../sql-common/change-feed-store.js';
import { embeddedDialect } from './dialect.js';

const q = embeddedDialect.quoteIdent;
const changes = (source: Pick<DataSourceInfo, 'schema' | 'name'>) =>
  `${q(source.schema)}.${q(changeTableName(source))}`;
const FEED_ROW = `dbo."SVC_CHANGE_FEED" WHERE "SOURCE_SCHEMA" = $1 AND "SOURCE_NAME" = $2`;
const NOW_UTC = `(now() AT TIME ZONE 'UTC')`;
const STATE = `SELECT "FEED_ID"::text AS "feedId", "LAST_BATCH" AS "lastBatch", "REMOVED_TO_BATCH" AS "removedToBatch"`;

/**
 * The changed keys of a range of batches, each once, the page's worth in key order (a row
 * comparison after the previous page's key), then each key's current row (none: deleted).
 */
function readChanges(source: DataSourceInfo, after: boolean): string {
  const { keys, columns, on, order } = changedRowParts(source, q);
  const afterParams = keys.map((_, index) => `$${3 + index}`);
  const rowsParam = `$${3 + (after ? keys.length : 0)}`;
  const where = `"BATCH" > $1 AND "BATCH" <= $2${after ? ` AND (${keys.join(', ')}) > (${afterParams.join(', ')})` : ''}`;
  return (
    `SELECT ${columns}, CASE WHEN current_row.${keys[0]} IS NULL THEN 1 ELSE 0 END AS ${q(REMOVED_COLUMN)} ` +
    `FROM (SELECT DISTINCT ${keys.join(', ')} FROM ${changes(source)} WHERE ${where} ` +
    `ORDER BY ${keys.join(', ')} FETCH FIRST ${rowsParam} ROWS ONLY) AS changed ` +
    `LEFT JOIN ${q(source.schema)}.${q(source.name)} AS current_row ON ${on} ` +
    `ORDER BY ${order}`
  );
}

/** The retention clean-up in one statement: the last batch stamped before the time, marked removed, then deleted. */
function remove(source: DataSourceInfo): string {
  return (
    `WITH cut AS (SELECT max("BATCH") AS batch FROM ${changes(source)} WHERE "BATCH" IS NOT NULL AND "STAMPED_AT" < $3), ` +
    `feed AS (UPDATE dbo."SVC_CHANGE_FEED" AS f SET "REMOVED_TO_BATCH" = cut.batch FROM cut ` +
    `WHERE cut.batch IS NOT NULL AND f."SOURCE_SCHEMA" = $1 AND f."SOURCE_NAME" = $2 AND f."REMOVED_TO_BATCH" < cut.batch RETURNING 1), ` +
    `gone AS (DELETE FROM ${changes(source)} AS c USING cut WHERE c."BATCH" <= cut.batch RETURNING 1) ` +
    `SELECT (SELECT count(*) FROM gone)::int AS removed, (SELECT count(*) FROM feed)::int AS marked`
  );
}

/** The writers' traces of a range of batches (the index on BATCH finds the range). */
const writers = (source: Pick<DataSourceInfo, 'schema' | 'name'>) =>
  `SELECT DISTINCT "TRACEPARENT" AS traceparent FROM ${changes(source)} ` +
  'WHERE "BATCH" > $1 AND "BATCH" <= $2 AND "TRACEPARENT" IS NOT NULL LIMIT $3';

/** The change feed on the embedded database. */
export function createEmbeddedChangeFeedStore(db: Database): ChangeFeedStore {
  return createSqlChangeFeedStore(db, {
    state: `${STATE} FROM ${FEED_ROW}`,
    stamp: () => undefined,
    // In a transaction: the feed row's lock serialises stamps; MVCC hides rows of open transactions.
    stampSteps: (source) => ({
      stateAndPending: `${STATE}, EXISTS (SELECT 1 FROM ${changes(source)} WHERE "BATCH" IS NULL) AS pending FROM ${FEED_ROW}`,
      next: `UPDATE ${FEED_ROW.replace('dbo."SVC_CHANGE_FEED"', 'dbo."SVC_CHANGE_FEED" SET "LAST_BATCH" = "LAST_BATCH" + 1')} RETURNING "LAST_BATCH" AS batch`,
      mark: `UPDATE ${changes(source)} SET "BATCH" = $1, "STAMPED_AT" = ${NOW_UTC} WHERE "BATCH" IS NULL`,
    }),
    readChanges,
    remove,
    writers,
    // 42P01: undefined table (SVC_CHANGE_FEED missing).
    missingObject: new Set(['42P01']),
  });
}
