/**
 * A database with a span per statement (CONTRACT 8a): it reads a statement's keywords, so it is an
 * adapter, beside the SDK's but never importing it (the port's recorder does the exporting). A span
 * is named by the statement's operation and carries nothing else of it.
 */
import type { Database, QueryOptions } from '../../core/database.js';
import { childSpan, type TraceContext } from '../../core/trace-context.js';
import { recording, recordSpan, spanClock } from '../../core/tracing.js';

// Literals and comments go before anything is read of a statement: its name holds neither.
const STRINGS_AND_COMMENTS = /'(?:[^']|'')*'|--[^\n]*|\/\*[\s\S]*?\*\//g;
const WORDS = /[A-Za-z_][A-Za-z0-9_]*/g;
const PRELUDE = new Set(['DECLARE', 'SET', 'BEGIN', 'IF', 'WITH']);
const WRITES = ['MERGE', 'INSERT', 'UPDATE', 'DELETE'];
/** `EXEC [@result =] <procedure>`: the procedure as `schema.name`, brackets and quotes dropped. */
const EXEC =
  /\bEXEC(?:UTE)?\s+(?:@\w+\s*=\s*)?((?:\[[^\]]+\]|"[^"]+"|[A-Za-z_][\w$#]*)(?:\s*\.\s*(?:\[[^\]]+\]|"[^"]+"|[A-Za-z_][\w$#]*))*)/i;

/**
 * A statement's operation, the name of its span: `SELECT`, `INSERT`, `EXEC dbo.PROC`… Read from
 * the statement's keywords and identifiers only, once its string literals and comments are gone:
 * never its parameters, a value or the SQL text. A batch with a prelude (`DECLARE`, `SET`, `WITH`)
 * is named by the procedure it calls, else by the first write, else by what it starts with.
 */
export function statementOperation(sql: string): string {
  const bare = sql.replace(STRINGS_AND_COMMENTS, ' ');
  const words = (bare.match(WORDS) ?? []).map((word) => word.toUpperCase());
  const first = words[0];
  if (first === undefined) return 'SQL';
  const exec = first === 'EXEC' || first === 'EXECUTE' || PRELUDE.has(first) ? EXEC.exec(bare) : null;
  if (exec?.[1]) return `EXEC ${exec[1].replace(/[[\]"\s]/g, '')}`;
  if (PRELUDE.has(first)) {
    const write = words.find((word) => WRITES.includes(word));
    if (write) return write;
    if (words.includes('SELECT')) return 'SELECT';
  }
  return first;
}

/** OpenTelemetry's `db.system` of the port's dialects: the embedded one is PostgreSQL (PGlite). */
const DB_SYSTEM = { mssql: 'mssql', embedded: 'postgresql' } as const;

/**
 * `db` with a span per statement, each a child of `parent` named by its operation, with the
 * database system and nothing else of the statement. Without a recorder (tracing off) or in an
 * unsampled trace, `db` itself: no wrapper, no cost.
 */
export function tracedBy(db: Database, parent: TraceContext | undefined): Database {
  if (!recording(parent)) return db;
  const attributes = {
    'db.system': DB_SYSTEM[db.dialect.name],
    'db.system.name': DB_SYSTEM[db.dialect.name],
  };
  const span = (sql: string, startTime: number, failed: boolean) => {
    const operation = statementOperation(sql);
    recordSpan({
      name: operation,
      kind: 'client',
      context: childSpan(parent),
      startTime,
      endTime: spanClock(),
      attributes: { ...attributes, 'db.operation.name': operation },
      failed,
    });
  };
  async function timed<T>(sql: string, run: () => Promise<T>): Promise<T> {
    const startTime = spanClock();
    try {
      const result = await run();
      span(sql, startTime, false);
      return result;
    } catch (error) {
      span(sql, startTime, true);
      throw error;
    }
  }
  const query = (
    run: Pick<Database, 'query'>,
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ) => timed(sql, () => run.query(sql, params, options));
  return {
    ...db,
    query: (sql, params, options) => query(db, sql, params, options),
    async *streamBatches(sql, params, batchSize, options) {
      const startTime = spanClock();
      let failed = true;
      try {
        yield* db.streamBatches(sql, params, batchSize, options);
        failed = false;
      } finally {
        span(sql, startTime, failed);
      }
    },
    // The trace's writes leave its traceparent on the changes they make: the notifier's pass that
    // finds them links back to this trace (CONTRACT 8a).
    transaction: (fn, options) =>
      db.transaction(
        (tx) => fn({ dialect: tx.dialect, query: (sql, params, options) => query(tx, sql, params, options) }),
        { writer: parent.traceparent, ...options },
      ),
  };
}
