import type { Condition } from '../condition/index.js';
import type { DataSourceInfo, Row } from '../database.js';
import type { DataSourceCatalogue } from './data-source.js';

/**
 * Port: the Data API's reads of a tenant database's tables and views. Every read returns the rows
 * of the columns of `source` (those `selected`, else all; the primary key's always) in a
 * deterministic order (the primary key, else every sortable column), batch by batch, never holding more than one batch of `batchRows` in memory. The SQL
 * adapters implement it in their dialect (`shared/adapters/<dialect>/data-source-reader.ts`).
 */
export interface DataSourceReader {
  /** The catalogue the sources are resolved in; one object per database (lookups are cached on it). */
  readonly catalogue: DataSourceCatalogue;
  /** Every row. */
  readAll(source: DataSourceInfo, batchRows: number): AsyncIterable<Row[]>;
  /**
   * The rows that satisfy a checked condition. Translating it happens at the call, so a
   * condition too large for the dialect throws ConditionError before any row is read.
   */
  readMatching(source: DataSourceInfo, condition: Condition, batchRows: number): AsyncIterable<Row[]>;
  /** `rows` rows after skipping `offset` rows. */
  readPage(source: DataSourceInfo, offset: number, rows: number, batchRows: number): AsyncIterable<Row[]>;
  /**
   * At most `rows` rows whose primary key comes after `after` (the key's values of the row before
   * them, in key order), in key order; only for sources with a primary key.
   */
  readAfter(
    source: DataSourceInfo,
    after: readonly unknown[],
    rows: number,
    batchRows: number,
  ): AsyncIterable<Row[]>;
  /** How many rows the source has. */
  count(source: DataSourceInfo): Promise<number>;
}
