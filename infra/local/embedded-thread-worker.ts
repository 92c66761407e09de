/**
 * The worker side of infra/local/embedded-thread.ts: one embedded database (PGlite) in this
 * thread, served to the local stack's main thread through the database port, message by message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import {
  createEmbeddedDatabase,
  type EmbeddedQueryOptions,
  StalePreparedStatement,
  WaitInTransactionRequested,
} from '../../shared/adapters/embedded/index.js';
import type { Database, Row } from '../../shared/core/database.js';
import type { Reply, Request, SerializedError } from './embedded-thread.js';

const port = parentPort!;
const { dataDir } = workerData as { dataDir: Uint8Array };

const pg = new PGlite({ loadDataDir: new Blob([dataDir]) });
await pg.waitReady;
await pg.exec('SET search_path TO dbo, public');
// A transaction that met a stale prepared statement ends with it: its body is in the main thread,
// which runs it again (embedded-thread.ts).
const database = createEmbeddedDatabase(pg, { runAgainWhenStale: false });

type Tx = Pick<Database, 'query'>;
const running = new Map<number, AbortController>();
const streams = new Map<number, AsyncIterator<Row[]>>();
const transactions = new Map<number, { tx: Tx; finish: (commit: boolean) => void }>();

function serialize(error: unknown): SerializedError {
  const e = error as { name?: unknown; message?: unknown; dbCode?: unknown };
  return {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
    // A wait asked for in a transaction travels as its length in ms (embedded-thread.ts revives it).
    dbCode:
      error instanceof WaitInTransactionRequested
        ? String(error.ms)
        : error instanceof StalePreparedStatement
          ? String((error.cause as { code?: unknown }).code)
          : typeof e.dbCode === 'string'
            ? e.dbCode
            : undefined,
  };
}

const reply = (message: Reply) => port.postMessage(message);

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'query': {
      const controller = new AbortController();
      running.set(request.id, controller);
      try {
        const target = request.tx === undefined ? database : transactions.get(request.tx)?.tx;
        if (!target) throw new Error('The transaction has ended');
        const options: EmbeddedQueryOptions = { signal: controller.signal, waitInTransaction: request.waits };
        return await target.query(request.sql, [...request.params], options);
      } finally {
        running.delete(request.id);
      }
    }
    case 'inspect':
      return (await pg.query(request.sql, [...request.params])).rows;
    case 'find':
      return database.findDataSource(request.schema, request.name);
    case 'list':
      return database.listDataSources();
    case 'stream': {
      const iterator = database
        .streamBatches(request.sql, request.params, request.batchSize)
        [Symbol.asyncIterator]();
      streams.set(request.id, iterator);
      return request.id;
    }
    case 'next': {
      const iterator = streams.get(request.stream);
      if (!iterator) return { done: true };
      const step = await iterator.next();
      if (step.done) streams.delete(request.stream);
      return step.done ? { done: true } : { done: false, rows: step.value };
    }
    case 'return': {
      const iterator = streams.get(request.stream);
      streams.delete(request.stream);
      await iterator?.return?.();
      return undefined;
    }
    case 'begin': {
      // The transaction stays open until 'end' says how it finishes; 'end' is answered with its outcome.
      let opened!: () => void;
      const open = new Promise<void>((resolve) => {
        opened = resolve;
      });
      const outcome = database.transaction(
        (tx) =>
          new Promise<void>((resolve, reject) => {
            transactions.set(request.id, {
              tx,
              finish: (commit) => (commit ? resolve() : reject(new RolledBack())),
            });
            opened();
          }),
        request.writer ? { writer: request.writer } : undefined,
      );
      ended.set(request.id, outcome);
      try {
        // A transaction that fails to open (the database closed) rejects before it opens.
        await Promise.race([open, outcome]);
      } catch (error) {
        ended.delete(request.id);
        throw error;
      }
      return request.id;
    }
    case 'end': {
      const transaction = transactions.get(request.tx);
      transactions.delete(request.tx);
      const outcome = ended.get(request.tx);
      ended.delete(request.tx);
      transaction?.finish(request.commit);
      try {
        await outcome;
      } catch (error) {
        if (!(error instanceof RolledBack)) throw error;
      }
      return undefined;
    }
    case 'abort':
      running.get(request.target)?.abort();
      return undefined;
    case 'close':
      await pg.close();
      return undefined;
  }
}

class RolledBack extends Error {}
const ended = new Map<number, Promise<void>>();

port.on('message', (request: Request) => {
  handle(request).then(
    (value) => reply({ id: request.id, value }),
    (error: unknown) => reply({ id: request.id, error: serialize(error) }),
  );
});
reply({ id: 0, value: 'ready' });
