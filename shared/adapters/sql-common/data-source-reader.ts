/**
 * What the two SQL adapters share of the Data API's reads: the sort order and the call sequence.
 * No SQL text of either dialect lives here; each adapter passes its own statements.
 */
import type { CompiledCondition, Condition } from '../../core/condition/index.js';
import { type ConditionTranslator, translateCondition } from '../../core/condition/index.js';
import type { DataSourceReader } from '../../core/data-api/reader.js';
import type { ColumnInfo, Database, DataSourceInfo, Row } from '../../core/database.js';

// Types SQL Server cannot sort by; ordering on them would fail.
const UNSORTABLE_TYPES = new Set(['text', 'ntext', 'image', 'xml', 'sql_variant', 'geography', 'geometry']);

/** Deterministic order: the primary key, else every sortable column in ordinal order; may be empty. */
export function sortColumns(source: DataSourceInfo): readonly string[] {
  return source.primaryKey.length > 0
    ? source.primaryKey
    : source.columns
        .filter((c) => c.kind !== 'binary' && c.kind !== 'other' && !UNSORTABLE_TYPES.has(c.dataType))
        .map((c) => c.name);
}

/**
 * The columns a read selects: those chosen (`columns=`), else all, and the primary key's after
 * them where not chosen, so that a page's last row always tells where the next one starts.
 */
export function readColumns(source: DataSourceInfo): readonly ColumnInfo[] {
  const selected = source.selected;
  if (!selected) return source.columns;
  const chosen = new Set(selected.map((c) => c.name));
  const keys = source.columns.filter((c) => source.primaryKey.includes(c.name) && !chosen.has(c.name));
  return keys.length === 0 ? selected : [...selected, ...keys];
}

/**
 * A dialect's statements of the Data API's reads, every one selecting {@link readColumns} in
 * {@link sortColumns} order. Of a source with a row scope, each reads only the rows whose scope
 * column equals one more parameter after those listed (see {@link scopeParams}).
 */
export interface DataSourceStatements {
  selectAll(source: DataSourceInfo): string;
  /** Rows satisfying `where`, a translated condition whose placeholders start at 1. */
  selectWhere(source: DataSourceInfo, where: CompiledCondition): string;
  /**
   * Skips parameter 1 rows and returns parameter 2 rows. With a primary key, as a deferred join:
   * the page's keys are found first on the narrowest index that holds them (skipping keys is
   * cheap, skipping whole rows is not), then only those rows are read; the same rows in the same
   * order as the plain OFFSET query.
   */
  selectPage(source: DataSourceInfo): string;
  /**
   * Keyset continuation: the rows whose primary key comes after parameters 1..k (one per key
   * column, in key order), in key order, at most parameter k+1 of them; a seek on the key's index,
   * so it costs the same at any depth.
   */
  selectAfter(source: DataSourceInfo): string;
  /** One row, one column `n`: the number of rows. */
  count(source: DataSourceInfo): string;
}

/** A read's parameters, the row scope's value last where the source has one. */
export function scopeParams(source: DataSourceInfo, params: readonly unknown[] = []): unknown[] {
  return source.rowScope ? [...params, source.rowScope.value] : [...params];
}

async function* oneBatch(rows: Promise<Row[]>): AsyncIterable<Row[]> {
  const batch = await rows;
  if (batch.length > 0) yield batch;
}

/**
 * The Data API's reads over a database connection, in the statements of its dialect. The
 * condition translator is given only where conditions are read (`getDataWithCondition`), so that
 * the other functions' bundles do not carry the condition compilers.
 */
export function createSqlDataSourceReader(
  db: Database,
  sql: DataSourceStatements,
  translate: ConditionTranslator | undefined,
): DataSourceReader {
  return {
    catalogue: db,
    readAll: (source, batchRows) => db.streamBatches(sql.selectAll(source), scopeParams(source), batchRows),
    readMatching(source: DataSourceInfo, condition: Condition, batchRows: number) {
      if (!translate) throw new Error('This function reads no conditions: no condition translator is wired');
      const where = translateCondition(condition, translate, 1);
      return db.streamBatches(sql.selectWhere(source, where), scopeParams(source, where.params), batchRows);
    },
    readPage(source, offset, rows, batchRows) {
      // A page that fits one batch is read in one statement, without a cursor's extra round trips.
      const params = scopeParams(source, [offset, rows]);
      if (rows > batchRows) return db.streamBatches(sql.selectPage(source), params, batchRows);
      return oneBatch(db.query(sql.selectPage(source), params));
    },
    readAfter(source, after, rows, batchRows) {
      const params = scopeParams(source, [...after, rows]);
      if (rows > batchRows) return db.streamBatches(sql.selectAfter(source), params, batchRows);
      return oneBatch(db.query(sql.selectAfter(source), params));
    },
    async count(source) {
      const rows = await db.query(sql.count(source), scopeParams(source));
      return Number(rows[0]?.n ?? 0);
    },
  };
}
