import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import type { Database } from '../../shared/core/database.js';
import { sqlOn } from '../support/demo.js';
import {
  type DemoOperationsTarget,
  demoOperationTests,
  operationFailure,
} from '../support/demo-operations.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

// The demo's operations of CONTRACT 5a on a T-SQL database (the engine of npm run test:tsql, or
// MSSQL_URL), through the Web API store as the service calls them; the embedded twins are in
// demo-operations.test.ts.
describe.skipIf(!url)('The demo operations 2001 and 2002 on SQL Server (integration)', () => {
  let db: Database;
  let target: DemoOperationsTarget;

  beforeAll(async () => {
    // The scripts are idempotent: running them here is safe whatever ran before. They run on a
    // connection of their own, as db:apply does: their batches' SET NOCOUNT ON stays on a pooled
    // session on the engine (docs/sql-server.md) and would hide the OUTPUT rows of the store's
    // statements (a job's attempt) on the sessions the tests then use.
    const scripts = createMssqlDatabase({ connectionString: url! });
    try {
      await runMssqlScripts(scripts, { demo: true });
    } finally {
      await scripts.close();
    }
    db = createMssqlDatabase({ connectionString: url! });
    target = { db, storeOn: (connection) => createMssqlWebApiStore(connection, 'demo') };
  }, 300_000);
  afterAll(async () => {
    await db?.close();
  });

  // 266: the transaction count differs after the procedure.
  demoOperationTests(() => target, '266');

  it("2002 inside a transaction rolls back the caller's own work too: no save point", async () => {
    const marker = `2002-${Date.now()}`;
    // The caller's own write before the procedure goes too: the ROLLBACK had no save point.
    const failed = await db
      .transaction(async (tx) => {
        await sqlOn(tx)`UPDATE dbo."SUBJECT" SET "TELEFON" = ${marker} WHERE "ID" = ${1}`;
        return createMssqlWebApiStore(tx, 'demo').callOperation(
          (await target.storeOn(db).findOperation(2002))!,
          [],
        );
      })
      .catch((e: unknown) => e);
    expect((operationFailure(failed).cause as { dbCode?: string }).dbCode).toBe('266');
    expect(await sqlOn(db)`SELECT COUNT(*) AS n FROM dbo."SUBJECT" WHERE "TELEFON" = ${marker}`).toEqual([
      { n: 0 },
    ]);
  });

  it('2002 called alone (no transaction of its caller) writes nothing and answers no rows', async () => {
    const store = target.storeOn(db);
    expect(await store.callOperation((await store.findOperation(2002))!, [])).toEqual([]);
    expect(await sqlOn(db)`SELECT COUNT(*) AS n FROM dbo."DOKUMENT" WHERE "CISLO" = ${'KONEC'}`).toEqual([
      { n: 0 },
    ]);
  });
});
