/** The Data API's reads in PostgreSQL (the embedded database). */
import type { ConditionTranslator } from '../../core/condition/index.js';
import type { DataSourceReader } from '../../core/data-api/reader.js';
import type { Database, DataSourceInfo } from '../../core/database.js';
import { createSqlDataSourceReader, sortColumns } from '../sql-common/data-source-reader.js';
import { postgresDialect } from './dialect.js';

const q = postgresDialect.quoteIdent;
const columnList = (source: DataSourceInfo) => source.columns.map((c) => q(c.name)).join(', ');
const from = (source: DataSourceInfo) => `${q(source.schema)}.${q(source.name)}`;
function orderBy(source: DataSourceInfo): string {
  const columns = sortColumns(source);
  return columns.length === 0 ? '' : `ORDER BY ${columns.map(q).join(', ')}`;
}

/** The reads; `translate` (this folder's `condition.ts`) where conditions are read. */
export function createEmbeddedDataSourceReader(
  db: Database,
  translate?: ConditionTranslator,
): DataSourceReader {
  return createSqlDataSourceReader(
    db,
    {
      selectAll: (source) => `SELECT ${columnList(source)} FROM ${from(source)} ${orderBy(source)}`,
      selectWhere: (source, where) =>
        `SELECT ${columnList(source)} FROM ${from(source)} WHERE ${where.sql} ${orderBy(source)}`,
      selectPage: (source) =>
        `SELECT ${columnList(source)} FROM ${from(source)} ${orderBy(source)} OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY`,
      count: (source) => `SELECT count(*) AS "n" FROM ${from(source)}`,
    },
    translate,
  );
}
