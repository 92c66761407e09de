import type { Database, Row, SqlDialect } from '../../shared/core/database.js';

/** A statement a recording database was given. */
export interface RecordedStatement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

export interface RecordingOptions {
  /** What `query` answers: the same rows every time, or what the function returns (or throws). */
  readonly answer?: Row[] | ((sql: string, params: readonly unknown[]) => Row[]);
  /** What `streamBatches` yields, recording its statement too; without them streaming fails as unused. */
  readonly batches?: readonly Row[][];
  /** The catalogue; by default every lookup finds nothing. */
  readonly findDataSource?: Database['findDataSource'];
  /** Records the SQL with each run of white space as one space, trimmed. */
  readonly compactSql?: boolean;
}

/**
 * A database port for unit tests that records the statements it is given, in order, and answers
 * as told; transactions fail as unused.
 */
export function recordingDatabase(dialect: SqlDialect, options: RecordingOptions = {}) {
  const { answer = [], batches, compactSql = false } = options;
  const statements: RecordedStatement[] = [];
  let batchesRead = 0;
  const record = (sql: string, params: readonly unknown[]) =>
    statements.push({ sql: compactSql ? sql.replace(/\s+/g, ' ').trim() : sql, params });
  const db: Database = {
    dialect,
    async query(sql, params = []) {
      record(sql, params);
      return typeof answer === 'function' ? answer(sql, params) : answer;
    },
    streamBatches: batches
      ? async function* (sql, params) {
          record(sql, params);
          for (const batch of batches) {
            batchesRead++;
            yield batch;
          }
        }
      : () => {
          throw new Error('not used');
        },
    findDataSource: options.findDataSource ?? (async () => undefined),
    listDataSources: async () => [],
    transaction: () => Promise.reject(new Error('not used')),
    close: async () => undefined,
  };
  return { db, statements, batchesRead: () => batchesRead };
}
