/** The Data API's reads in PostgreSQL (the embedded database). */
import type { ConditionTranslator } from '../../core/condition/index.js';
import type { DataSourceReader } from '../../core/data-api/reader.js';
import type { Database, DataSourceInfo } from '../../core/database.js';
import { createSqlDataSourceReader, readColumns, sortColumns } from '../sql-common/data-source-reader.js';
import { embeddedDialect } from './dialect.js';

const PAGE = 'OFFSET $1 ROWS FETCH NEXT $2 ROWS ONLY';
const q = embeddedDialect.quoteIdent;
const columnList = (source: DataSourceInfo) =>
  readColumns(source)
    .map((c) => q(c.name))
    .join(', ');
const from = (source: DataSourceInfo) => `${q(source.schema)}.${q(source.name)}`;
/** The row scope's test, its value parameter `index`; `and` joins it to another test. */
/** A test the row scope is added to, in parentheses when it is. */
const within = (source: DataSourceInfo, test: string) => (source.rowScope ? `(${test})` : test);
const scope = (source: DataSourceInfo, index: number, joiner: 'WHERE' | 'AND' = 'WHERE') =>
  source.rowScope ? ` ${joiner} ${q(source.rowScope.column)} = $${index}` : '';
function orderBy(source: DataSourceInfo): string {
  const columns = sortColumns(source);
  return columns.length === 0 ? '' : `ORDER BY ${columns.map(q).join(', ')}`;
}

/**
 * A page as a deferred join: its keys first, in key order, from the primary key's index (an
 * index-only scan: skipping keys is cheap, skipping whole rows is not), then only those rows. The
 * same rows in the same order as the plain OFFSET query. A one-column key is looked up as
 * `= ANY(ARRAY(…))`, which PostgreSQL answers with index probes in key order; a join would let
 * the planner hash it against a scan of the whole table.
 */
function deferredJoinPage(source: DataSourceInfo): string {
  const keys = source.primaryKey.map(q);
  const keyPage = `SELECT ${keys.join(', ')} FROM ${from(source)}${scope(source, 3)} ORDER BY ${keys.join(', ')} ${PAGE}`;
  if (keys.length === 1) {
    return `SELECT ${columnList(source)} FROM ${from(source)} WHERE ${keys[0]} = ANY(ARRAY(${keyPage})) ORDER BY ${keys[0]}`;
  }
  const on = keys.map((k) => `page_row.${k} = page_key.${k}`).join(' AND ');
  return (
    `SELECT ${readColumns(source)
      .map((c) => `page_row.${q(c.name)}`)
      .join(', ')} FROM ${from(source)} AS page_row ` +
    `INNER JOIN (${keyPage}) AS page_key ON ${on} ORDER BY ${keys.map((k) => `page_row.${k}`).join(', ')}`
  );
}

/**
 * The rows after a key, as a row comparison: PostgreSQL seeks it on the primary key's index
 * (a B-tree compares rows of its columns in the same order).
 */
function afterKeyPage(source: DataSourceInfo): string {
  const keys = source.primaryKey.map(q);
  const params = keys.map((_, index) => `$${index + 1}`);
  return (
    `SELECT ${columnList(source)} FROM ${from(source)} WHERE (${keys.join(', ')}) > (${params.join(', ')})${scope(source, keys.length + 2, 'AND')} ` +
    `ORDER BY ${keys.join(', ')} FETCH FIRST $${keys.length + 1} ROWS ONLY`
  );
}

/** The reads; `translate` (this folder's `condition.ts`) where conditions are read. */
export function createEmbeddedDataSourceReader(
  db: Database,
  translate?: ConditionTranslator,
): DataSourceReader {
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
      count: (source) => `SELECT count(*) AS "n" FROM ${from(source)}${scope(source, 1)}`,
    },
    translate,
  );
}
