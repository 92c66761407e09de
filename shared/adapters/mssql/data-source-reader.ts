/** The Data API's reads in T-SQL. */
import type { ConditionTranslator } from '../../core/condition/index.js';
import type { DataSourceReader } from '../../core/data-api/reader.js';
import type { Database, DataSourceInfo } from '../../core/database.js';
import { createSqlDataSourceReader, readColumns, sortColumns } from '../sql-common/data-source-reader.js';
import { mssqlDialect } from './dialect.js';

const PAGE = 'OFFSET @p1 ROWS FETCH NEXT @p2 ROWS ONLY';
const q = mssqlDialect.quoteIdent;
const columnList = (source: DataSourceInfo) =>
  readColumns(source)
    .map((c) => q(c.name))
    .join(', ');
const from = (source: DataSourceInfo) => `${q(source.schema)}.${q(source.name)}`;
/** The row scope's test, its value parameter `index`; `and` joins it to another test. */
/** A test the row scope is added to, in parentheses when it is. */
const within = (source: DataSourceInfo, test: string) => (source.rowScope ? `(${test})` : test);
const scope = (source: DataSourceInfo, index: number, joiner: 'WHERE' | 'AND' = 'WHERE') =>
  source.rowScope ? ` ${joiner} ${q(source.rowScope.column)} = @p${index}` : '';
/** T-SQL requires an ORDER BY for OFFSET/FETCH; without sortable columns, an explicitly arbitrary one. */
function orderBy(source: DataSourceInfo): string {
  const columns = sortColumns(source);
  return columns.length === 0 ? 'ORDER BY (SELECT NULL)' : `ORDER BY ${columns.map(q).join(', ')}`;
}

/**
 * A page as a deferred join: its keys first, in key order, from the narrowest index that holds
 * them (skipping keys is cheap, skipping whole rows is not), then only those rows. The same rows
 * in the same order as the plain OFFSET query.
 */
function deferredJoinPage(source: DataSourceInfo): string {
  const keys = source.primaryKey.map(q);
  const on = keys.map((k) => `page_row.${k} = page_key.${k}`).join(' AND ');
  return (
    `SELECT ${readColumns(source)
      .map((c) => `page_row.${q(c.name)}`)
      .join(', ')} FROM ${from(source)} AS page_row ` +
    `INNER JOIN (SELECT ${keys.join(', ')} FROM ${from(source)}${scope(source, 3)} ORDER BY ${keys.join(', ')} ${PAGE}) AS page_key ` +
    `ON ${on} ORDER BY ${keys.map((k) => `page_row.${k}`).join(', ')}`
  );
}

/**
 * The rows after a key. T-SQL has no row comparison: `(a, b) > (x, y)` is spelled out, its first
 * column bounded on its own as well (`a >= x`) so that the optimiser seeks the key's index there.
 */
function afterKeyPage(source: DataSourceInfo): string {
  const keys = source.primaryKey.map(q);
  const param = (index: number) => `@p${index + 1}`;
  const after = keys.map((key, index) =>
    [...keys.slice(0, index).map((k, i) => `${k} = ${param(i)}`), `${key} > ${param(index)}`].join(' AND '),
  );
  const where =
    keys.length === 1
      ? after[0]
      : `${keys[0]} >= ${param(0)} AND (${after.map((a) => `(${a})`).join(' OR ')})`;
  return (
    `SELECT ${columnList(source)} FROM ${from(source)} WHERE ${within(source, where!)}${scope(source, keys.length + 2, 'AND')} ` +
    `ORDER BY ${keys.join(', ')} OFFSET 0 ROWS FETCH NEXT ${param(keys.length)} ROWS ONLY`
  );
}

/** The reads; `translate` (this folder's `condition.ts`) where conditions are read. */
export function createMssqlDataSourceReader(db: Database, translate?: ConditionTranslator): DataSourceReader {
  return createSqlDataSourceReader(
    db,
    {
      selectAll: (source) =>
        `SELECT ${columnList(source)} FROM ${from(source)}${scope(source, 1)} ${orderBy(source)}`,
      selectWhere: (source, where) =>
        `SELECT ${columnList(source)} FROM ${from(source)} WHERE ${within(source, where.sql)}${scope(source, where.params.length + 1, 'AND')} ${orderBy(source)}`,
      selectPage: (source) =>
        source.primaryKey.length > 0
          ? deferredJoinPage(source)
          : `SELECT ${columnList(source)} FROM ${from(source)}${scope(source, 3)} ${orderBy(source)} ${PAGE}`,
      selectAfter: afterKeyPage,
      count: (source) => `SELECT COUNT_BIG(*) AS [n] FROM ${from(source)}${scope(source, 1)}`,
    },
    translate,
  );
}
