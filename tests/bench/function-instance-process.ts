/**
 * One cold instance of the Data API's getRowsCount function, for connections.bench.ts: a process
 * of its own (as a Lambda instance is) running the handler from the sources with the pool settings
 * of its environment (`DB_POOL_*`), the demo tenant on the database of `BENCH_CONNECTION_STRING`.
 * Told `{ run: { concurrency, durationMs } }` over IPC, it invokes the handler `concurrency` at a
 * time for that long and answers the counts of its answers; `{ exit: true }` closes its pools.
 *
 * `BENCH_POOL=before` gives it the pool as it was before issue 18 instead: the driver's defaults
 * (10 connections, 30 s waits) and a `SELECT 1` before every connection lent.
 */
import sql from 'mssql';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';

const connectionString = process.env.BENCH_CONNECTION_STRING;
if (!connectionString || !process.send) throw new Error('run by connections.bench.ts');

if (process.env.BENCH_POOL === 'before') {
  const prototype = sql.ConnectionPool.prototype as unknown as {
    config: sql.config;
    connect(...args: unknown[]): unknown;
  };
  const connect = prototype.connect;
  prototype.connect = function connectAsBefore(this: typeof prototype, ...args: unknown[]) {
    this.config.validateConnection = true;
    this.config.pool = {};
    return connect.apply(this, args);
  };
}

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
setTenantRegistry(
  parseTenantRegistry({
    tenants: {
      demo: {
        database: { kind: 'mssql', connectionString },
        dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
        dataSources: '*',
      },
    },
  }),
);
const { handler } = await import('../../functions/data-api/getRowsCount.js');
const event = httpApiEvent({
  method: 'GET',
  route: '/{tenant}/JsonAPI/Data/getRowsCount/{dataSource}',
  pathParameters: { tenant: 'demo', dataSource: 'SUBJECT' },
  headers: { authorization: `Basic ${Buffer.from('demo:demo-password').toString('base64')}` },
});

/** Answers by status: 200, 503 database_busy, anything else. */
interface Counts {
  ok: number;
  busy: number;
  other: number;
  firstOther?: string;
}

async function load(concurrency: number, durationMs: number): Promise<Counts> {
  const counts: Counts = { ok: 0, busy: 0, other: 0 };
  const until = Date.now() + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < until) {
        const answer = await invokeHttp(handler, event);
        if (answer.statusCode === 200) counts.ok++;
        else if (answer.statusCode === 503 && String(answer.body).includes('database_busy')) counts.busy++;
        else {
          counts.other++;
          counts.firstOther ??= `${answer.statusCode} ${String(answer.body).slice(0, 200)}`;
        }
      }
    }),
  );
  return counts;
}

process.on('message', (message: { run?: { concurrency: number; durationMs: number }; exit?: true }) => {
  if (message.run) {
    void load(message.run.concurrency, message.run.durationMs).then((counts) => process.send!({ counts }));
  }
  if (message.exit) {
    void import('../../shared/config/databases.js')
      .then(({ openDatabase }) => openDatabase({ kind: 'mssql', connectionString }))
      .then((db) => db.close())
      .finally(() => process.exit(0));
  }
});
// The cold start's first request (the driver's first login, the password's scrypt), before any load.
const first = await invokeHttp(handler, event);
process.send({
  ready: first.statusCode === 200,
  status: first.statusCode,
  body: String(first.body).slice(0, 200),
});
