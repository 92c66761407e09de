/**
 * The local stack's embedded database on a thread of its own. PGlite runs a statement to its end
 * inside the thread that calls it (WebAssembly, no preemption; `statement_timeout` never fires), so
 * in the stack's main thread one long statement (a condition over 100,000 rows) would hold every
 * other request, `/health` included. Here the main thread only passes messages: it stays free to
 * answer while the database works, as a tenant's SQL Server leaves the Lambdas free.
 */
import { Worker } from 'node:worker_threads';
import { embeddedDialect } from '../../shared/adapters/embedded/dialect.js';
import {
  endsStale,
  runAgainWhenStale,
  StalePreparedStatement,
  transactionWithWaitsOutside,
  type WaitInTransaction,
  WaitInTransactionRequested,
} from '../../shared/adapters/embedded/index.js';
import {
  type Database,
  DatabaseStatementError,
  DatabaseUnavailableError,
  type DataSourceInfo,
  type DataSourceName,
  type QueryOptions,
  type Row,
  StatementCancelledError,
} from '../../shared/core/database.js';

/** What the main thread asks (`id` pairs a request with its reply). */
export type Request = { readonly id: number } & (
  | { op: 'query'; sql: string; params: readonly unknown[]; tx?: number; waits?: WaitInTransaction }
  | { op: 'inspect'; sql: string; params: readonly unknown[] }
  | { op: 'find'; schema: string | undefined; name: string }
  | { op: 'list' }
  | { op: 'stream'; sql: string; params: readonly unknown[]; batchSize: number }
  | { op: 'next'; stream: number }
  | { op: 'return'; stream: number }
  | { op: 'begin'; writer?: string }
  | { op: 'end'; tx: number; commit: boolean }
  | { op: 'abort'; target: number }
  | { op: 'close' }
);
export type SerializedError = { name: string; message: string; dbCode: string | undefined };
export type Reply = { readonly id: number; value?: unknown; error?: SerializedError };

/** Raw SQL on the embedded database, for tests that look inside PostgreSQL (PGlite's `query` shape). */
export interface EmbeddedInspector {
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<{ rows: T[] }>;
}

export interface EmbeddedDatabaseThread {
  readonly database: Database;
  readonly inspector: EmbeddedInspector;
  /** Whether the thread and its database are open (answered without asking the busy thread). */
  isOpen(): boolean;
  close(): Promise<void>;
}

/** The port's error again on this side of the thread boundary (classes do not cross it). */
function revive(error: SerializedError): Error {
  switch (error.name) {
    case 'DatabaseStatementError':
      return new DatabaseStatementError(error.message, error.dbCode);
    case 'DatabaseUnavailableError':
      return new DatabaseUnavailableError(error.message);
    case 'StatementCancelledError':
      return new StatementCancelledError(error.message);
    case 'WaitInTransactionRequested':
      // Its wait in ms travels as the code; the main thread's transaction waits it out.
      return new WaitInTransactionRequested(Number(error.dbCode));
    case 'StalePreparedStatement':
      // The transaction is run again from this side (its body is here).
      return new StalePreparedStatement(new DatabaseStatementError(error.message, error.dbCode));
    default:
      return new Error(error.message);
  }
}

/** Opens a copy of the database dumped in `dataDir` (a PGlite data-dir dump) on its own thread. */
export async function openEmbeddedDatabaseThread(dataDir: Uint8Array): Promise<EmbeddedDatabaseThread> {
  // The worker is TypeScript: under `npm start` it inherits tsx from the process; under a test
  // runner the process was not started with it. Only the loaders are passed on: a worker refuses
  // process-wide flags such as --expose-gc.
  const loaders: string[] = [];
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i]!;
    if (/^--(import|require|loader|experimental-loader)=/.test(arg)) loaders.push(arg);
    else if (/^--(import|require|loader|experimental-loader)$/.test(arg) && i + 1 < process.execArgv.length) {
      loaders.push(arg, process.execArgv[++i]!);
    }
  }
  const execArgv = loaders.some((arg) => arg.includes('tsx')) ? loaders : [...loaders, '--import', 'tsx'];
  const worker = new Worker(new URL('./embedded-thread-worker.ts', import.meta.url), {
    workerData: { dataDir },
    execArgv,
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let closed = false;
  let ready!: () => void;
  let failedToStart!: (error: Error) => void;
  const started = new Promise<void>((resolve, reject) => {
    ready = resolve;
    failedToStart = reject;
  });
  worker.on('message', (message: Reply) => {
    if (message.id === 0) return ready();
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiting?.reject(revive(message.error));
    else waiting?.resolve(message.value);
  });
  const lost = (cause: unknown) => {
    closed = true;
    failedToStart(cause as Error);
    for (const waiting of pending.values()) {
      waiting.reject(new DatabaseUnavailableError('The embedded database is closed', { cause }));
    }
    pending.clear();
  };
  worker.on('error', lost);
  worker.on('exit', (code) => lost(new Error(`The embedded database thread ended (${code})`)));
  await started;

  type Ask = Request extends infer R
    ? R extends { op: infer O }
      ? Omit<R, 'id'> & { op: O }
      : never
    : never;
  function ask<T>(request: Ask, signal?: AbortSignal): Promise<T> {
    if (closed) return Promise.reject(new DatabaseUnavailableError('The embedded database is closed'));
    const id = nextId++;
    const answer = new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
    worker.postMessage({ ...request, id });
    if (signal) {
      const abort = () => worker.postMessage({ op: 'abort', target: id, id: nextId++ });
      signal.addEventListener('abort', abort, { once: true });
      answer.then(
        () => signal.removeEventListener('abort', abort),
        () => signal.removeEventListener('abort', abort),
      );
    }
    return answer;
  }

  const cancelled = () => new StatementCancelledError('The statement was cancelled');
  const query = (
    sql: string,
    params: readonly unknown[] = [],
    options?: QueryOptions,
    tx?: { readonly id: number; readonly waits: WaitInTransaction },
  ) => {
    if (options?.signal?.aborted) return Promise.reject(cancelled());
    const asked = ask<Row[]>({ op: 'query', sql, params, tx: tx?.id, waits: tx?.waits }, options?.signal);
    // The wait is the statement's: its signal cancels it.
    return asked.catch((error: unknown) => {
      throw error instanceof WaitInTransactionRequested
        ? new WaitInTransactionRequested(error.ms, options?.signal)
        : error;
    });
  };

  const database: Database = {
    dialect: embeddedDialect,
    query: (sql, params, options) => query(sql, params, options),
    async *streamBatches(sql, params, batchSize, options) {
      const signal = options?.signal;
      if (signal?.aborted) throw cancelled();
      const stream = await ask<number>({ op: 'stream', sql, params, batchSize });
      let finished = false;
      try {
        while (true) {
          // A cancelled read stops at the next batch, as on the embedded database itself.
          if (signal?.aborted) throw cancelled();
          const step = await ask<{ done: boolean; rows?: Row[] }>({ op: 'next', stream });
          if (step.done) {
            finished = true;
            return;
          }
          yield step.rows!;
        }
      } finally {
        if (!finished) await ask({ op: 'return', stream }).catch(() => undefined);
      }
    },
    findDataSource: (schema, name) => ask<DataSourceInfo | undefined>({ op: 'find', schema, name }),
    listDataSources: () => ask<DataSourceName[]>({ op: 'list' }),
    // As on the embedded database itself: a wait asked for in a transaction happens outside it, and
    // a transaction that met a stale prepared statement is run again.
    transaction: (fn, options) =>
      runAgainWhenStale(() =>
        transactionWithWaitsOutside(async (waits) => {
          const id = await ask<number>({
            op: 'begin',
            ...(options?.writer ? { writer: options.writer } : {}),
          });
          let result: Awaited<ReturnType<typeof fn>>;
          try {
            result = await endsStale((noteStale) =>
              fn({
                dialect: embeddedDialect,
                query: (sql, params, options) => noteStale(query(sql, params, options, { id, waits })),
              }),
            );
          } catch (error) {
            await ask({ op: 'end', tx: id, commit: false }).catch(() => undefined);
            throw error;
          }
          await ask({ op: 'end', tx: id, commit: true });
          return result;
        }),
      ),
    async close() {
      // The thread belongs to whoever opened it (the local stack).
    },
  };

  return {
    database,
    inspector: {
      query: async <T>(sql: string, params: readonly unknown[] = []) => ({
        rows: await ask<T[]>({ op: 'inspect', sql, params }),
      }),
    },
    isOpen: () => !closed,
    async close() {
      if (closed) return;
      await ask({ op: 'close' }).catch(() => undefined);
      closed = true;
      await worker.terminate();
    },
  };
}
