import { type Database, type Row, StatementCancelledError } from '../../core/database.js';
import { findMssqlDataSource, listMssqlDataSources } from './catalogue.js';
import { closeSharedPool, mapError, type PoolOwner, type SqlServerTls, sharedPool } from './connection.js';
import { mssqlDialect } from './dialect.js';
import {
  bindParams,
  type MssqlColumns,
  type MssqlPoolLike,
  type MssqlRequestLike,
  type MssqlTransactionLike,
  rowNormaliser,
} from './types.js';

export type { ConnectionPoolSettings, PoolOwner, SqlServerTls } from './connection.js';
export type { MssqlParamType, MssqlPoolLike, MssqlTypedParam } from './types.js';

export interface MssqlDatabaseOptions {
  readonly connectionString: string;
  /** The tenant's TLS settings from the registry: the CA to trust, the name to verify. */
  readonly tls?: SqlServerTls;
  /** Used instead of the shared pool for `connectionString` (tests). */
  readonly pool?: MssqlPoolLike;
  /**
   * Whose pool each statement takes its connection from, with its size and time-outs; asked at
   * every statement. Default: the process's, with DEFAULT_POOL_SETTINGS.
   */
  readonly poolOwner?: () => PoolOwner;
}

/**
 * Puts the writer's `traceparent` in the session's context, or takes it away (NULL): what the
 * change feed's triggers read (infra/sql/mssql/service/050-change-feed.sql).
 */
const SET_WRITER = "EXEC sp_set_session_context @key = N'svc.traceparent', @value = @p1";

/** One statement; an abort of `signal` cancels it on the server (a TDS attention), as SSMS's Stop does. */
async function run(
  request: MssqlRequestLike,
  sql: string,
  params: readonly unknown[],
  signal?: AbortSignal,
): Promise<Row[]> {
  if (signal?.aborted) throw new StatementCancelledError('The statement was cancelled');
  bindParams(request, params);
  const cancel = () => request.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    const { recordset } = await request.query(sql);
    return recordset ? recordset.map(rowNormaliser(recordset.columns)) : [];
  } catch (error) {
    if (signal?.aborted) throw new StatementCancelledError('The statement was cancelled', { cause: error });
    throw error;
  } finally {
    signal?.removeEventListener('abort', cancel);
  }
}

/** Yields the first result set in batches, pausing the request while a full batch waits for the consumer. */
async function* streamRows(
  request: MssqlRequestLike,
  sql: string,
  params: readonly unknown[],
  batchSize: number,
  signal?: AbortSignal,
): AsyncGenerator<Row[]> {
  if (signal?.aborted) throw new StatementCancelledError('The statement was cancelled');
  bindParams(request, params);
  let buffer: Row[] = [];
  let normalise = rowNormaliser(undefined);
  let recordsets = 0;
  let paused = false;
  let finished = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };

  request.stream = true;
  request.on('recordset', (columns: MssqlColumns) => {
    recordsets += 1;
    normalise = rowNormaliser(columns);
  });
  request.on('row', (row: Row) => {
    // Like query(): only the first result set.
    if (recordsets > 1) return;
    buffer.push(normalise(row));
    if (buffer.length >= batchSize && !paused) {
      paused = true;
      request.pause();
      notify();
    }
  });
  // Stays attached after an early return, so the cancellation error is absorbed rather than thrown.
  request.on('error', (error: unknown) => {
    failure ??= error;
    notify();
  });
  request.on('done', () => {
    finished = true;
    notify();
  });
  // An abort cancels the statement on the server and ends the stream with StatementCancelledError.
  const cancel = () => {
    failure = new StatementCancelledError('The statement was cancelled', { cause: signal?.reason });
    request.cancel();
    notify();
  };
  signal?.addEventListener('abort', cancel, { once: true });
  Promise.resolve(request.query(sql)).catch((error: unknown) => {
    failure ??= error;
    finished = true;
    notify();
  });

  try {
    while (true) {
      if (failure !== undefined) throw failure;
      // A paused request may still deliver the rows of the packet in hand: cut them into batches.
      if (buffer.length >= batchSize || (finished && buffer.length > 0)) {
        const batch = buffer.slice(0, batchSize);
        buffer = buffer.slice(batchSize);
        yield batch;
        continue;
      }
      if (finished) return;
      const arrived = new Promise<void>((resolve) => {
        wake = resolve;
      });
      if (paused) {
        paused = false;
        request.resume();
      }
      await arrived;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    // The consumer stopped early (or the statement failed): free the connection.
    if (!finished) request.cancel();
  }
}

/** Creates the SQL Server adapter of the database port, on a pool shared per connection string and TLS settings. */
export function createMssqlDatabase(options: MssqlDatabaseOptions): Database {
  const { pool, poolOwner } = options;
  const target = { connectionString: options.connectionString, tls: options.tls };
  const getPool = () => (pool ? Promise.resolve(pool) : sharedPool(target, poolOwner?.()));
  const query: Database['query'] = async (sql, params = [], options) => {
    try {
      return await run((await getPool()).request(), sql, params, options?.signal);
    } catch (error) {
      throw mapError(error);
    }
  };

  return {
    dialect: mssqlDialect,
    query,

    async *streamBatches(sql, params, batchSize, options) {
      if (!Number.isInteger(batchSize) || batchSize < 1)
        throw new RangeError('batchSize must be a positive integer');
      try {
        yield* streamRows((await getPool()).request(), sql, params, batchSize, options?.signal);
      } catch (error) {
        throw mapError(error);
      }
    },

    findDataSource(schema, name) {
      return findMssqlDataSource(query, schema, name);
    },

    listDataSources() {
      return listMssqlDataSources(query);
    },

    async transaction(fn, options) {
      let tx: MssqlTransactionLike;
      try {
        tx = (await getPool()).transaction();
        await tx.begin();
      } catch (error) {
        throw mapError(error);
      }
      if (options?.writer) {
        try {
          await run(tx.request(), SET_WRITER, [options.writer]);
        } catch (error) {
          await tx.rollback().catch(() => undefined);
          throw mapError(error);
        }
      }
      // A session's context outlives its transaction (the pool hands the session on): the
      // writer's trace goes before the transaction ends, whichever way it ends.
      const clearWriter = () =>
        options?.writer ? run(tx.request(), SET_WRITER, [null]).then(() => undefined) : Promise.resolve();
      try {
        const result = await fn({
          dialect: mssqlDialect,
          async query(sql, params = [], options) {
            try {
              return await run(tx.request(), sql, params, options?.signal);
            } catch (error) {
              throw mapError(error);
            }
          },
        });
        await clearWriter();
        await tx.commit();
        return result;
      } catch (error) {
        await clearWriter().catch(() => undefined);
        // The server may have rolled back already (XACT_ABORT, severe errors): the original error matters.
        await tx.rollback().catch(() => undefined);
        throw mapError(error);
      }
    },

    async close() {
      if (pool) await pool.close();
      else await closeSharedPool(target);
    },
  };
}
