import { setTimeout as sleep } from 'node:timers/promises';
import type { PGlite } from '@electric-sql/pglite';
import {
  type ColumnInfo,
  type ColumnKind,
  type Database,
  DatabaseStatementError,
  DatabaseUnavailableError,
  type DataSourceInfo,
  type QueryOptions,
  type Row,
  StatementCancelledError,
} from '../../core/database.js';
import { embeddedDialect } from './dialect.js';
import { preparedStatements, StalePreparedStatement } from './prepared-statements.js';

export { StalePreparedStatement } from './prepared-statements.js';

// PostgreSQL type OIDs whose default parsing does not fit the port's value conventions.
const INT8 = 20;
const NUMERIC = 1700;
const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const DATE = 1082;
const TIME = 1083;
const TIMETZ = 1266;
const UUID = 2950;

const DATE_TIME_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/;
const DATE_TEXT = /^\d{4}-\d\d-\d\d$/;
const TIME_TEXT = /^\d\d:\d\d:\d\d/;

/**
 * A date-time as the answers write it, `YYYY-MM-DDThh:mm:ss` of its wall clock (the session is in
 * UTC, as the SQL Server driver's `Date`s are), without fraction or zone: callers that know no
 * column types, such as a Web API operation's rows, pass it on as it is. What does not fit four
 * digits of year (infinity, BC, year 10000) stays PostgreSQL's text.
 */
function wallClockText(text: string): string {
  if (!DATE_TIME_TEXT.test(text) || text.endsWith(' BC')) return text;
  return `${text.slice(0, 10)}T${text.slice(11, 19)}`;
}

/** A time of day as `hh:mm:ss`, as the SQL Server adapter gives it. */
const timeOfDayText = (text: string) => (TIME_TEXT.test(text) ? text.slice(0, 8) : text);

/** Keeps dates and times as the answers' wall-clock text and turns exact numerics into JSON-ready numbers. */
const parsers = {
  [INT8]: (v: string) => Number(v),
  [NUMERIC]: (v: string) => Number(v),
  [TIMESTAMP]: wallClockText,
  [TIMESTAMPTZ]: wallClockText,
  [DATE]: (v: string) => (DATE_TEXT.test(v) ? `${v}T00:00:00` : v),
  [TIME]: timeOfDayText,
  [TIMETZ]: timeOfDayText,
  [UUID]: (v: string) => v.toUpperCase(),
};

const DEFAULT_SCHEMAS = ['dbo', 'public'];

/** The writer's `traceparent` as the transaction's own setting, which the change feed's triggers read. */
const SET_WRITER = "SELECT set_config('svc.traceparent', $1, true)";

/** Notice raised by `dbo."SVC_DELAY"(seconds)` (infra/sql/embedded/030-web-api.sql). */
const DELAY_NOTICE = 'svc_delay';

/**
 * Query options that collect the delays a statement asks for. PGlite runs in this process, so a
 * `pg_sleep` would freeze every request; a statement asks for a wait instead, and it happens
 * after the statement, without holding the database.
 */
function delayOptions() {
  const requested = { ms: 0 };
  return {
    requested,
    options: {
      parsers,
      onNotice(notice: { message?: string; detail?: string }) {
        const seconds = Number(notice.detail);
        if (notice.message === DELAY_NOTICE && seconds > 0) requested.ms += seconds * 1000;
      },
    },
  };
}

const cancelled = (cause?: unknown) =>
  new StatementCancelledError('The statement was cancelled', cause === undefined ? undefined : { cause });

/**
 * What a statement inside a transaction does with a wait it asks for: `report` it (the
 * transaction is rolled back, the wait happens outside it, and the transaction runs again:
 * {@link transactionWithWaitsOutside}), or `skip` it (the transaction's second run, whose wait
 * has happened). Outside a transaction a statement waits after it ends.
 */
export type WaitInTransaction = 'report' | 'skip';

/** The port's query options, with how a statement in a transaction treats its wait (the thread passes it on). */
export interface EmbeddedQueryOptions extends QueryOptions {
  readonly waitInTransaction?: WaitInTransaction;
}

/**
 * A statement of a transaction asked for a wait (`SVC_DELAY`). PGlite has one session: a
 * transaction that waited while open would hold every other request of the database for as long,
 * so the transaction is given up instead and the wait happens outside it ({@link transactionWithWaitsOutside}).
 */
export class WaitInTransactionRequested extends Error {
  override readonly name = 'WaitInTransactionRequested';
  constructor(
    readonly ms: number,
    /** The statement's signal: cancels the wait. */
    readonly signal?: AbortSignal,
  ) {
    super(`A statement of the transaction asked for a wait of ${ms} ms`);
  }
}

/**
 * Runs a transaction whose statements may ask for waits, as a procedure of a server database
 * would spend its time: the first run reports a wait (and is rolled back), the wait happens
 * outside the transaction, without holding the database, cancelled by the statement's signal; the
 * second run skips it and commits. A transaction's effects thus commit once, after its waits, as
 * a long procedure's would: a caller killed or cancelled during the wait leaves nothing behind.
 */
export async function transactionWithWaitsOutside<T>(
  run: (waits: WaitInTransaction) => Promise<T>,
): Promise<T> {
  try {
    return await run('report');
  } catch (error) {
    if (!(error instanceof WaitInTransactionRequested)) throw error;
    try {
      await sleep(error.ms, undefined, { signal: error.signal });
    } catch (cause) {
      if (error.signal?.aborted) throw cancelled(cause);
      throw cause;
    }
    return run('skip');
  }
}

/**
 * One statement. PGlite runs a statement to its end in this process, so cancellation takes effect
 * before it starts and during the wait it asked for, which is where a long operation spends its time.
 * Nothing can stop a statement once it runs: the event loop is blocked meanwhile, and
 * `statement_timeout` never fires (tried: a 1 s limit on a 14 s statement). In a transaction, a
 * wait is reported or skipped ({@link WaitInTransaction}).
 */
async function runStatement(
  target: Pick<PGlite, 'query'>,
  sql: string,
  params: readonly unknown[],
  signal?: AbortSignal,
  inTransaction?: WaitInTransaction,
): Promise<Row[]> {
  if (signal?.aborted) throw cancelled();
  const { requested, options } = delayOptions();
  const result = await target.query<Row>(sql, params as unknown[], options);
  if (requested.ms > 0 && inTransaction !== 'skip') {
    if (inTransaction === 'report') throw new WaitInTransactionRequested(requested.ms, signal);
    try {
      await sleep(requested.ms, undefined, { signal });
    } catch (error) {
      if (signal?.aborted) throw cancelled(error);
      throw error;
    }
  }
  return result.rows;
}

let cursorSequence = 0;

/**
 * One transaction's body that notes a statement prepared earlier that no longer fitted
 * ({@link StalePreparedStatement}): it has aborted the transaction whatever the caller made of its
 * error (a procedure's failure handled behind a save point, say), so the body ends with it, and
 * the transaction is rolled back. `noteStale` wraps each statement of the transaction.
 */
export async function endsStale<T>(
  body: (noteStale: <R>(statement: Promise<R>) => Promise<R>) => Promise<T>,
): Promise<T> {
  let stale: StalePreparedStatement | undefined;
  const noteStale = <R>(statement: Promise<R>) =>
    statement.catch((error: unknown) => {
      if (error instanceof StalePreparedStatement) stale ??= error;
      throw error;
    });
  let result: T;
  try {
    result = await body(noteStale);
  } catch (error) {
    throw stale ?? error;
  }
  if (stale) throw stale;
  return result;
}

/**
 * Runs a transaction once more, from its start, when it ended on {@link StalePreparedStatement}
 * (rolled back, every statement to be parsed afresh): once, as the second run's statements are all
 * parsed anew. A second such end leaves as the statement's own error.
 */
export async function runAgainWhenStale<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof StalePreparedStatement)) throw error;
    return attempt().catch((again: unknown) => {
      throw again instanceof StalePreparedStatement ? again.cause : again;
    });
  }
}

/** How the port's transactions are run. */
export interface EmbeddedDatabaseSettings {
  /**
   * Whether a transaction that met a stale prepared statement is run again here (default), or
   * ends with {@link StalePreparedStatement} for its caller to run again: the local stack's
   * database thread, whose transactions' bodies are in the main thread.
   */
  readonly runAgainWhenStale?: boolean;
}

/** The database port over an embedded PostgreSQL (PGlite) instance owned by the caller. */
export function createEmbeddedDatabase(pg: PGlite, settings: EmbeddedDatabaseSettings = {}): Database {
  // Statements outside a transaction; inside one they take the transaction's (`runIn`).
  const statements = preparedStatements(pg);
  const outsideTransactions: Pick<PGlite, 'query'> = {
    query: (sql, params, options) => statements.run(sql, params ?? [], options) as never,
  };
  async function query(sql: string, params: readonly unknown[] = [], options?: QueryOptions): Promise<Row[]> {
    try {
      return await runStatement(outsideTransactions, sql, params, options?.signal);
    } catch (error) {
      throw mapError(pg, error);
    }
  }

  async function* streamBatches(
    sql: string,
    params: readonly unknown[],
    batchSize: number,
    options?: QueryOptions,
  ) {
    // A WITH HOLD cursor lives outside any transaction, so other requests are not blocked
    // between batches while this one is being written out. A cancelled signal stops the read
    // at the next batch (the cursor is closed); a statement itself cannot be interrupted.
    const cursor = `svc_cursor_${++cursorSequence}`;
    await query(`DECLARE ${cursor} NO SCROLL CURSOR WITH HOLD FOR ${sql}`, params, options);
    try {
      while (true) {
        const rows = await query(`FETCH FORWARD ${Math.trunc(batchSize)} FROM ${cursor}`, [], options);
        if (rows.length === 0) return;
        yield rows;
        if (rows.length < batchSize) return;
      }
    } finally {
      await query(`CLOSE ${cursor}`).catch(() => undefined);
    }
  }

  async function findDataSource(
    schema: string | undefined,
    name: string,
  ): Promise<DataSourceInfo | undefined> {
    const schemas = schema === undefined ? DEFAULT_SCHEMAS : [schema];
    for (const candidate of schemas) {
      const objects = await query(
        `SELECT table_schema AS "schema", table_name AS "name", table_type AS "type"
           FROM information_schema.tables
          WHERE lower(table_schema) = lower($1) AND lower(table_name) = lower($2)
            AND table_schema NOT IN ('pg_catalog', 'information_schema')
          ORDER BY table_name <> $2, table_name
          LIMIT 1`,
        [candidate, name],
      );
      const object = objects[0];
      if (!object) continue;
      const realSchema = String(object.schema);
      const realName = String(object.name);
      const columns = await query(
        `SELECT column_name AS "name", data_type AS "dataType", ordinal_position AS "ordinal",
                is_nullable = 'YES' AS "nullable"
           FROM information_schema.columns
          WHERE table_schema = $1 AND table_name = $2
          ORDER BY ordinal_position`,
        [realSchema, realName],
      );
      const keys = await query(
        `SELECT k.column_name AS "name"
           FROM information_schema.table_constraints c
           JOIN information_schema.key_column_usage k
             ON k.constraint_schema = c.constraint_schema AND k.constraint_name = c.constraint_name
          WHERE c.table_schema = $1 AND c.table_name = $2 AND c.constraint_type = 'PRIMARY KEY'
          ORDER BY k.ordinal_position`,
        [realSchema, realName],
      );
      return {
        schema: realSchema,
        name: realName,
        kind: object.type === 'VIEW' ? 'view' : 'table',
        columns: columns.map(
          (c): ColumnInfo => ({
            name: String(c.name),
            dataType: String(c.dataType),
            kind: columnKind(String(c.dataType)),
            ordinal: Number(c.ordinal),
            nullable: c.nullable === true,
          }),
        ),
        primaryKey: keys.map((k) => String(k.name)),
      };
    }
    return undefined;
  }

  /** Tables and views of the schemas a name without one is looked up in, then of the others. */
  async function listDataSources() {
    const rows = await query(
      `SELECT table_schema AS "schema", table_name AS "name"
         FROM information_schema.tables
        WHERE table_type IN ('BASE TABLE', 'VIEW')
          AND table_schema NOT IN ('pg_catalog', 'information_schema')
        ORDER BY table_schema, table_name`,
    );
    return rows.map((row) => ({ schema: String(row.schema), name: String(row.name) }));
  }

  return {
    dialect: embeddedDialect,
    query,
    streamBatches,
    findDataSource,
    listDataSources,
    async transaction(fn, options) {
      // What the caller's own code throws (not a statement's error) leaves as it was thrown: the
      // caller tells its own errors apart by their class (a fenced journal, say).
      const thrownByCaller = new WeakSet<object>();
      const attempt = () =>
        transactionWithWaitsOutside((waits) =>
          pg.transaction((tx) =>
            endsStale(async (noteStale) => {
              // Prepared like the statements outside (a Web API call's procedure and journal end
              // are in one), not through the transaction's own `query`, which parses each time.
              const inTransaction: Pick<PGlite, 'query'> = {
                query: (sql, params, options) =>
                  noteStale(statements.runIn(tx, sql, params ?? [], options)) as never,
              };
              try {
                // The writer's trace for the change feed's triggers (050-change-feed.sql): a setting
                // of this transaction only (`is_local`), gone at its end whichever way it ends.
                if (options?.writer) await inTransaction.query(SET_WRITER, [options.writer]);
                return await fn({
                  dialect: embeddedDialect,
                  // Mapped here too, so that a statement's error keeps its code across the embedded
                  // database's thread (the local stack), as outside a transaction.
                  query: (sql, params = [], options?: EmbeddedQueryOptions) =>
                    runStatement(
                      inTransaction,
                      sql,
                      params,
                      options?.signal,
                      options?.waitInTransaction ?? waits,
                    ).catch((error: unknown) => {
                      throw mapError(pg, error);
                    }),
                });
              } catch (error) {
                if (error instanceof Error && !(error as { code?: unknown }).code) thrownByCaller.add(error);
                throw error;
              }
            }),
          ),
        );
      try {
        return await (settings.runAgainWhenStale === false ? attempt() : runAgainWhenStale(attempt));
      } catch (error) {
        if (error instanceof Error && thrownByCaller.has(error)) throw error;
        throw mapError(pg, error);
      }
    },
    async close() {
      // The instance belongs to whoever created it (the local stack or a test).
    },
  };
}

function columnKind(dataType: string): ColumnKind {
  switch (dataType) {
    case 'integer':
    case 'smallint':
    case 'bigint':
      return 'int';
    case 'numeric':
    case 'money':
      return 'decimal';
    case 'real':
    case 'double precision':
      return 'float';
    case 'character varying':
    case 'character':
    case 'text':
    case 'xml':
    case 'citext':
      return 'string';
    case 'timestamp without time zone':
    case 'timestamp with time zone':
      return 'datetime';
    case 'date':
      return 'date';
    case 'time without time zone':
    case 'time with time zone':
      return 'time';
    case 'uuid':
      return 'guid';
    case 'bytea':
      return 'binary';
    case 'boolean':
      return 'bool';
    default:
      return 'other';
  }
}

function mapError(pg: PGlite, error: unknown): Error {
  if (
    error instanceof DatabaseStatementError ||
    error instanceof DatabaseUnavailableError ||
    error instanceof StatementCancelledError ||
    error instanceof WaitInTransactionRequested ||
    error instanceof StalePreparedStatement
  ) {
    return error;
  }
  if (pg.closed) return new DatabaseUnavailableError('The embedded database is closed', { cause: error });
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return new DatabaseStatementError(message, typeof code === 'string' ? code : undefined, { cause: error });
}
