/**
 * What the two SQL adapters share of the change feed's store (CONTRACT 4b): the call sequence and
 * the reading of answers. No SQL text of either dialect lives here; each adapter passes its own.
 */
import type { ChangeFeedState, ChangeFeedStore } from '../../core/data-api/changes.js';
import { type Database, DatabaseStatementError, type DataSourceInfo, type Row } from '../../core/database.js';
import { changeFeedNames } from '../../core/sql-names.js';
import { readColumns } from './data-source-reader.js';

/**
 * The change table beside a recorded table: `SVC_CHANGES_<TABLE>` in its schema (the registry and
 * the scripts refuse a table whose derived names would not fit: core/sql-names.ts).
 */
export const changeTableName = (source: Pick<DataSourceInfo, 'name'>) =>
  changeFeedNames(source.name).changeTable;

/**
 * What a page of changes selects and joins on, in a dialect's quoting: the key's columns from the
 * change table (`changed`, so that a tombstone carries them), the others from the table's current
 * row (`current_row`, none for a deleted key).
 */
export function changedRowParts(source: DataSourceInfo, q: (name: string) => string) {
  const keys = source.primaryKey.map(q);
  return {
    keys,
    columns: readColumns(source)
      .map((c) => (source.primaryKey.includes(c.name) ? `changed.${q(c.name)}` : `current_row.${q(c.name)}`))
      .join(', '),
    on: keys.map((k) => `current_row.${k} = changed.${k}`).join(' AND '),
    order: keys.map((k) => `changed.${k}`).join(', '),
  };
}

/** A dialect's statements of the change feed; parameters 1 and 2 are the source's schema and name. */
export interface ChangeFeedStatements {
  /** One row `feedId`, `lastBatch`, `removedToBatch`, or none when the source is not recorded. */
  state: string;
  /**
   * Stamps (see {@link ChangeFeedStore.stamp}) and answers as {@link state}: one statement batch,
   * or `undefined` when the dialect does it in steps ({@link stampSteps}).
   */
  stamp(source: DataSourceInfo): string | undefined;
  /**
   * For a dialect without statement batches: {@link state} with `pending` (whether any change waits
   * for a stamp) in one statement, then, when one waits, the stamp in a transaction.
   */
  stampSteps?(source: DataSourceInfo): { stateAndPending: string; next: string; mark: string };
  /** Parameters 1 from, 2 to, 3.. the key after (when `after`), then rows. */
  readChanges(source: DataSourceInfo, after: boolean): string;
  /** Parameter 3 the time before which stamped changes go; one row `removed`. */
  remove(source: DataSourceInfo): string;
  /** Parameters 1 from, 2 to, 3 at most how many: rows `traceparent`, distinct, none NULL. */
  writers(source: Pick<DataSourceInfo, 'schema' | 'name'>): string;
  /** Error codes that say the feed's table is not there (scripts not applied). */
  missingObject: ReadonlySet<string>;
}

function toState(rows: Row[]): ChangeFeedState | undefined {
  const row = rows[0];
  if (!row) return undefined;
  return {
    feedId: String(row.feedId).toUpperCase(),
    lastBatch: Number(row.lastBatch),
    removedToBatch: Number(row.removedToBatch),
  };
}

async function* oneBatch(rows: Promise<Row[]>): AsyncIterable<Row[]> {
  const batch = await rows;
  if (batch.length > 0) yield batch;
}

/** The change feed over a database connection, in the statements of its dialect. */
export function createSqlChangeFeedStore(db: Database, sql: ChangeFeedStatements): ChangeFeedStore {
  const names = (source: DataSourceInfo) => [source.schema, source.name];
  const unlessMissing = async <T>(run: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof DatabaseStatementError && sql.missingObject.has(error.dbCode ?? ''))
        return undefined;
      throw error;
    }
  };
  const state = (source: DataSourceInfo) =>
    unlessMissing(async () => toState(await db.query(sql.state, names(source))));
  const stamp = async (source: DataSourceInfo) => {
    const batch = sql.stamp(source);
    if (batch !== undefined) return unlessMissing(async () => toState(await db.query(batch, names(source))));
    const steps = sql.stampSteps?.(source);
    if (!steps) return state(source);
    // A change table that is not there (42P01) is a table not recorded, as a missing feed row is.
    const first = await unlessMissing(() => db.query(steps.stateAndPending, names(source)));
    const current = first && toState(first);
    if (!current || !first[0]?.pending) return current;
    await db.transaction(async (tx) => {
      const next = await tx.query(steps.next, names(source));
      await tx.query(steps.mark, [Number(next[0]?.batch)]);
    });
    return state(source);
  };
  return {
    stamp,
    state,
    readChanges(source, range, after, rows, batchRows) {
      const params = [range.from, range.to, ...(after ?? []), rows];
      const text = sql.readChanges(source, after !== undefined);
      if (rows > batchRows) return db.streamBatches(text, params, batchRows);
      return oneBatch(db.query(text, params));
    },
    async writers(source, range, limit) {
      const rows = await db.query(sql.writers(source), [range.from, range.to, limit]);
      return rows.map((row) => String(row.traceparent));
    },
    async removeStampedBefore(source, before) {
      if (!(await stamp(source))) return 0;
      const rows = await db.query(sql.remove(source), [...names(source), before]);
      return Number(rows[0]?.removed ?? 0);
    },
  };
}
