import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getRowsCount } from '../../functions/data-api/getRowsCount.js';
import { handler as webTest } from '../../functions/web-api/test.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { openDatabase } from '../../shared/config/databases.js';
import { type FunctionInstance, runAsFunctionInstance } from '../../shared/config/function-instance.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { type Database, DatabaseBusyError } from '../../shared/core/database.js';
import { DEMO_AUTH } from '../support/demo.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

/**
 * The pool bound on a real server (the T-SQL engine in test:tsql): more statements at once than a
 * process's pool holds wait for a connection, then run or fail with the 503 that says the
 * connections are all in use; the server itself never counts more sessions from the pool than its
 * size. Sessions are counted by the server (`sys.dm_exec_sessions`, which Babelfish has too), by
 * the application name each pool here logs in with. On SQL Server that view shows other sessions
 * only with VIEW SERVER STATE.
 */
describe.skipIf(!url)('connection pool bound on SQL Server (integration)', () => {
  let observer: Database;
  const opened: Database[] = [];
  const run = `${process.pid}-${Date.now().toString(36)}`;

  /** The test's connection string, its sessions named `name` on the server. */
  const named = (name: string) =>
    /^(mssql|sqlserver):\/\//i.test(url!)
      ? `${url}${url!.includes('?') ? '&' : '?'}appName=${encodeURIComponent(name)}`
      : `${url!.replace(/;\s*$/, '')};Application Name=${name}`;

  const sessions = async (name: string) =>
    Number(
      (
        await observer.query('SELECT COUNT(*) AS n FROM sys.dm_exec_sessions WHERE program_name = @p1', [
          name,
        ])
      )[0]?.n,
    );

  /** Runs `work` while counting `name`'s sessions every 25 ms; the work's outcome and the most seen. */
  async function counting<T>(name: string, work: () => Promise<T>): Promise<{ outcome: T; peak: number }> {
    let peak = 0;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        peak = Math.max(peak, await sessions(name));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    try {
      return { outcome: await work(), peak };
    } finally {
      done = true;
      await sampler;
      peak = Math.max(peak, await sessions(name));
    }
  }

  const pooled = (name: string, maxConnections: number, acquireTimeoutMs: number, idleTimeoutMs = 60_000) => {
    const db = createMssqlDatabase({
      connectionString: named(name),
      poolOwner: () => ({ id: name, settings: { maxConnections, acquireTimeoutMs, idleTimeoutMs } }),
    });
    opened.push(db);
    return db;
  };

  const wait = (db: Database, seconds: number) => db.query('EXEC dbo.WS_WAIT @seconds = @p1', [seconds]);

  /**
   * Logs the pool in before a test of its waits: its first login is bounded by the acquire time-out
   * too, and a login on a loaded machine may outlast a test's short one (it then goes on for the
   * next statement, which finds the pool connected).
   */
  const warmUp = async (db: Database) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.query('SELECT 1 AS one');
      } catch (error) {
        if (attempt === 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  beforeAll(async () => {
    observer = createMssqlDatabase({ connectionString: url! });
    // dbo.WS_WAIT holds a session as a slow statement does; the scripts are idempotent.
    await runMssqlScripts(observer);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(opened.map((db) => db.close().catch(() => undefined)));
    await observer?.close();
  });

  it('runs 8 statements at once through 2 connections: the extra ones wait, all succeed, 2 sessions at most', async () => {
    const name = `pool-wait-${run}`;
    const db = pooled(name, 2, 20_000);
    const started = Date.now();
    const { outcome, peak } = await counting(name, () =>
      Promise.all(Array.from({ length: 8 }, () => wait(db, 0.3))),
    );
    expect(outcome).toHaveLength(8);
    // Four rounds of two: each statement after the first two waited for a connection.
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 300 - 50);
    expect(peak).toBe(2);
  });

  it('fails the statements that find every connection busy for the acquire time-out, as busy', async () => {
    const name = `pool-busy-${run}`;
    const db = pooled(name, 2, 400);
    await warmUp(db);
    const { outcome, peak } = await counting(name, () =>
      Promise.allSettled(
        Array.from({ length: 6 }, async () => {
          const started = Date.now();
          try {
            await wait(db, 2);
            return { ok: true, ms: Date.now() - started };
          } catch (error) {
            return { error, ms: Date.now() - started };
          }
        }),
      ),
    );
    const results = outcome.map(
      (settled) => (settled as PromiseFulfilledResult<{ ok?: true; error?: unknown; ms: number }>).value,
    );
    const succeeded = results.filter((result) => result.ok);
    const refused = results.filter((result) => result.error);
    expect(succeeded).toHaveLength(2);
    expect(refused).toHaveLength(4);
    for (const { error, ms } of refused) {
      expect(error).toBeInstanceOf(DatabaseBusyError);
      expect(error).toMatchObject({ maxConnections: 2, waitedMs: 400, retryAfterSeconds: 1 });
      // Answered after the acquire time-out, not after the statements that held the connections.
      expect(ms).toBeGreaterThanOrEqual(350);
      expect(ms).toBeLessThan(1800);
    }
    expect(peak).toBeLessThanOrEqual(2);
    expect(peak).toBeGreaterThanOrEqual(1);
  });

  it('lets go of connections left unused for the idle time-out', async () => {
    const name = `pool-idle-${run}`;
    const db = pooled(name, 3, 5000, 1000);
    await Promise.all(Array.from({ length: 3 }, () => wait(db, 0.2)));
    expect(await sessions(name)).toBe(3);
    // The pool looks for idle connections once a second.
    const deadline = Date.now() + 6000;
    while ((await sessions(name)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await sessions(name)).toBe(0);
    // And opens one again when a statement comes.
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('answers a full pool through the handlers: Data API 503 database_busy, Web API 503/150, both with Retry-After', async () => {
    const name = `pool-handlers-${run}`;
    const connection = { kind: 'mssql' as const, connectionString: named(name) };
    setTenantRegistry(
      parseTenantRegistry({
        tenants: {
          pooled: {
            database: connection,
            dataApiUsers: [
              {
                name: 'demo',
                passwordHash:
                  'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=',
              },
            ],
            dataSources: '*',
            // The ERP's register: `test` then reads the database (registry applications need none).
            webApi: { DefContentType: 'application/json', applications: { erpTable: 'dbo.WS_APPLICATION' } },
          },
        },
      }),
    );
    // One instance of a request function: one connection, a short wait for it.
    const instance: FunctionInstance = {
      id: name,
      settings: { maxConnections: 1, acquireTimeoutMs: 300, idleTimeoutMs: 60_000 },
    };
    const count = () =>
      invokeHttp(
        getRowsCount,
        httpApiEvent({
          method: 'GET',
          route: '/{tenant}/JsonAPI/Data/getRowsCount/{dataSource}',
          pathParameters: { tenant: 'pooled', dataSource: 'SUBJECT' },
          headers: { authorization: DEMO_AUTH },
        }),
      );
    const test = () =>
      invokeHttp(
        webTest,
        httpApiEvent({
          method: 'GET',
          route: '/{tenant}/WebAPI/test',
          pathParameters: { tenant: 'pooled' },
          headers: { 'x-api-key': 'demo-api-key' },
        }),
      );
    await runAsFunctionInstance(instance, async () => {
      const db = await openDatabase(connection);
      opened.push(db);
      await warmUp(db);
      const { outcome, peak } = await counting(name, async () => {
        // Its one connection held by a slow statement, as an operation still running holds it.
        const slow = wait(db, 1.5);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const [data, web] = [await count(), await test()];
        await slow;
        return { data, web, after: await count() };
      });
      expect(outcome.data.statusCode).toBe(503);
      expect(outcome.data.headers).toMatchObject({ 'retry-after': '1' });
      expect(JSON.parse(String(outcome.data.body)).error).toMatchObject({
        code: 'database_busy',
        message: "The tenant database's connections are all in use; try again in 1 s",
      });
      expect(outcome.web.statusCode).toBe(503);
      expect(outcome.web.headers).toMatchObject({ 'retry-after': '1' });
      expect(JSON.parse(String(outcome.web.body)).data[0].error[0]).toEqual({
        errorCode: '150',
        errorMessage: "The tenant database's connections are all in use; try again in 1 s",
      });
      // Once the connection is free, the same instance answers.
      expect(outcome.after.statusCode).toBe(200);
      expect(peak).toBe(1);
    });
  });
});
