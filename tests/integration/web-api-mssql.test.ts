import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import { tenantDigest } from '../../shared/adapters/sql-common/web-api-store.js';
import { type Database, StatementCancelledError } from '../../shared/core/database.js';
import { encodeRow } from '../../shared/core/web-api/operations.js';
import { OperationFailedError, type WebApiStore } from '../../shared/core/web-api/store.js';
import { checkJobLeaseFencing } from '../support/job-lease.js';
import { runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

// The Web API store on a real SQL Server: runs when MSSQL_URL is set (no SQL Server exists on the
// development machines; the SQL it sends is unit-tested in tests/unit/web-api-sql-store.test.ts).
describe.skipIf(!url)('Web API store on SQL Server (integration)', () => {
  let db: Database;
  let store: WebApiStore;

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    // The scripts are idempotent: running them here is safe whatever ran before.
    await runMssqlScripts(db);
    store = createMssqlWebApiStore(db, 'demo');
  }, 300_000);

  afterAll(async () => {
    await db?.close();
  });

  const operation = async (vltyp: number) => (await store.findOperation(vltyp))!;

  it("finds applications of the ERP's register (the demo's WS_APPLICATION) by their exact key", async () => {
    expect(await store.findApplication('demo-api-key')).toEqual({
      id: 1,
      apiHashes: ['demo-api-hash'],
      active: true,
    });
    expect(await store.findApplication('DEMO-API-KEY')).toBeUndefined();
    expect((await store.findApplication('inactive-api-key'))?.active).toBe(false);
  });

  it('accepts exactly one of many concurrent claims of the same request, and an expired one again', async () => {
    const digest = `${Date.now()}`.padStart(64, 'f');
    const results = await Promise.all(Array.from({ length: 8 }, () => store.claimRequest(1, digest, 300)));
    expect(results.filter(Boolean)).toHaveLength(1);
    await db.query(
      'UPDATE dbo.WS_REPLAY_GUARD SET EXPIRES_AT = DATEADD(hour, -1, EXPIRES_AT) WHERE REQUEST_DIGEST = @p1',
      // The guard keeps the tenant's digest of the request (tenants may share a database).
      [tenantDigest('demo', digest)],
    );
    expect(await store.claimRequest(1, digest, 300)).toBe(true);
  });

  it('claims and journals in one batch: one journal row for many concurrent identical requests from two pools', async () => {
    // A second connection pool stands for a second Lambda.
    const other = createMssqlDatabase({ connectionString: url! });
    try {
      const stores = [store, createMssqlWebApiStore(other, 'demo')];
      const claim = { applicationId: 1, requestDigest: `${Date.now()}`.padStart(64, 'j'), holdSeconds: 300 };
      const requestId = `claim-${Date.now()}`;
      const opening = { applicationId: 1, vltyp: 1001, mode: 'sync' as const, request: '{}', requestId };
      const ids = await Promise.all(
        Array.from({ length: 8 }, (_, i) => stores[i % 2]!.claimAndOpenJournal(claim, opening)),
      );
      const accepted = ids.filter((id) => id !== undefined);
      expect(accepted).toHaveLength(1);
      const rows = await db.query('SELECT COUNT(*) AS n FROM dbo.WS_JOURNAL WHERE REQUEST_ID = @p1', [
        requestId,
      ]);
      expect(Number(rows[0]!.n)).toBe(1);
      expect(await store.readJournal(accepted[0]!)).toMatchObject({ state: 'running', vltyp: 1001 });
      expect(await store.claimRequest(1, claim.requestDigest, 300)).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('leaves no claim behind when the journal row cannot be written: the same request is taken on retry', async () => {
    // The twin of the embedded test in web-api-claim-journal.test.ts: the claim and the journal row
    // are one transaction, so a journal insert that fails takes the claim back with it.
    const claim = { applicationId: 1, requestDigest: `${Date.now()}`.padStart(64, 'u'), holdSeconds: 300 };
    const requestId = `unwritable-${Date.now()}`;
    const opening = { applicationId: 1, vltyp: 1001, mode: 'bogus', request: '{}', requestId };
    await expect(store.claimAndOpenJournal(claim, opening as never)).rejects.toMatchObject({ dbCode: '547' });
    const count = async (id: string) =>
      Number((await db.query('SELECT COUNT(*) AS n FROM dbo.WS_JOURNAL WHERE REQUEST_ID = @p1', [id]))[0]!.n);
    expect(await count(requestId)).toBe(0);
    const id = await store.claimAndOpenJournal(claim, {
      ...opening,
      mode: 'sync',
      requestId: `${requestId}-retried`,
    });
    expect(id).toEqual(expect.any(Number));
    expect(await count(`${requestId}-retried`)).toBe(1);
    // Nothing is left open on the pooled connections, and XACT_ABORT, on for the batch, is off again
    // (the engine keeps a batch's SET on the session), after an accepted, a refused and a failed claim.
    expect(
      await store.claimAndOpenJournal(claim, { ...opening, mode: 'sync', requestId: 'refused' }),
    ).toBeUndefined();
    const sessions = await Promise.all(
      Array.from({ length: 4 }, () =>
        db.query('SELECT @@TRANCOUNT AS open_transactions, CAST(@@OPTIONS & 16384 AS int) AS xact_abort'),
      ),
    );
    expect(sessions.map((rows) => rows[0])).toEqual(
      Array.from({ length: 4 }, () => ({ open_transactions: 0, xact_abort: 0 })),
    );
  });

  it('leaves no transaction open when a request time-out stops the claim batch inside it', async () => {
    // A connection string's requestTimeout makes the driver send an attention. Without XACT_ABORT,
    // SQL Server keeps the batch's transaction open on the pooled connection, and the next
    // statements given that connection would run inside it, never committed. The engine ends it
    // with or without XACT_ABORT (tried), so here this guards the outcome, not the setting; the
    // setting is checked in tests/unit/web-api-sql-store.test.ts.
    const claim = { applicationId: 1, requestDigest: `${Date.now()}`.padStart(64, 't'), holdSeconds: 300 };
    const impatient = createMssqlDatabase({
      connectionString: /^(mssql|sqlserver):\/\//i.test(url!)
        ? `${url}${url!.includes('?') ? '&' : '?'}requestTimeout=700`
        : `${url!.replace(/;\s*$/, '')};Request Timeout=700`,
    });
    try {
      const impatientStore = createMssqlWebApiStore(impatient, 'demo');
      await db
        .transaction(async (tx) => {
          // Another session holds the claim's key, uncommitted: the claim batch waits on it.
          await tx.query(
            'INSERT INTO dbo.WS_REPLAY_GUARD (APPLICATION_ID, REQUEST_DIGEST, EXPIRES_AT) VALUES (1, @p1, SYSUTCDATETIME())',
            [tenantDigest('demo', claim.requestDigest)],
          );
          const opening = {
            applicationId: 1,
            vltyp: 1001,
            mode: 'sync' as const,
            request: '{}',
            requestId: 'timed-out',
          };
          await expect(impatientStore.claimAndOpenJournal(claim, opening)).rejects.toThrow();
          throw new Error('roll back the holder');
        })
        .catch((error: Error) => {
          if (error.message !== 'roll back the holder') throw error;
        });
      const open = await Promise.all(
        Array.from({ length: 4 }, () => impatient.query('SELECT @@TRANCOUNT AS open_transactions')),
      );
      expect(open.map((rows) => rows[0])).toEqual(
        Array.from({ length: 4 }, () => ({ open_transactions: 0 })),
      );
    } finally {
      await impatient.close();
    }
  });

  it('runs the demo operations with the params as one JSON argument', async () => {
    expect(await store.callOperation(await operation(1001), [{ nazev: 'ALFA' }])).toEqual([
      { id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' },
    ]);
    const accounts = await store.callOperation(await operation(7), [{ kod_uctu: '21' }]);
    expect(accounts.map((row) => row.kod_uctu)).toEqual(['211000', '211100', '213000']);
    expect(await store.callOperation(await operation(9001), [{ seconds: '0.2' }])).toEqual([{ slept: 0.2 }]);
  });

  it("gives an operation's date-times, dates and times as the answer writes them on the embedded database too", async () => {
    await db.query(`IF OBJECT_ID(N'dbo.WS_OP_TEST_DATES', N'P') IS NULL
      EXEC (N'CREATE PROCEDURE dbo.WS_OP_TEST_DATES @params nvarchar(max) AS
        SELECT CAST(''2024-01-02T03:04:05.678'' AS datetime2) AS at,
               CAST(''2024-01-02T03:04:05.678+00:00'' AS datetimeoffset) AS at_zone,
               CAST(''2024-01-02'' AS date) AS day,
               CAST(''09:11:59.123'' AS time) AS clock;')`);
    const rows = await store.callOperation(
      { vltyp: 9210, procedure: 'dbo.WS_OP_TEST_DATES', rowName: 'Dates' },
      [],
    );
    // The twin of the embedded handler test in web-api-handlers.test.ts.
    expect(rows.map(encodeRow)).toEqual([
      {
        at: '2024-01-02T03:04:05',
        at_zone: '2024-01-02T03:04:05',
        day: '2024-01-02T00:00:00',
        clock: '09:11:59',
      },
    ]);
  });

  it('cancels 9001 on the server when its signal aborts, and the pool serves the next call', async () => {
    const cancellation = new AbortController();
    const started = Date.now();
    const running = store
      .callOperation(await operation(9001), [{ seconds: '10' }], cancellation.signal)
      .catch((e: unknown) => e);
    setTimeout(() => cancellation.abort(), 300);
    expect(await running).toBeInstanceOf(StatementCancelledError);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await store.callOperation(await operation(7), [{ kod_uctu: '211' }])).toHaveLength(2);
  });

  it("reports 9002's own message", async () => {
    const error = await store.callOperation(await operation(9002), []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationFailedError);
    expect((error as OperationFailedError).publicMessage).toMatch(/always fails/);
  });

  it('journals, leases and ends a job once', async () => {
    const id = await store.openJournal({
      applicationId: 1,
      vltyp: 7,
      mode: 'async',
      request: '{}',
      requestId: 'it',
    });
    expect(await store.readJournal(id)).toMatchObject({
      id,
      state: 'running',
      attempts: 0,
      leaseHeld: false,
    });
    expect(await store.startAttempt(id, 60, 2)).toMatchObject({ id, attempts: 1, leaseHeld: true });
    // Held: no second attempt while the lease runs.
    expect(await store.startAttempt(id, 60, 2)).toBeUndefined();
    expect(await store.readJournal(id)).toMatchObject({ attempts: 1, leaseHeld: true });
    await store.releaseJob(id, 1);
    expect(await store.startAttempt(id, 60, 2)).toMatchObject({ attempts: 2 });
    await store.releaseJob(id, 2);
    // Its attempts used up: not taken again, though no lease is held.
    expect(await store.startAttempt(id, 60, 2)).toBeUndefined();
    expect(await store.readJournal(id)).toMatchObject({ state: 'running', attempts: 2, leaseHeld: false });
    const outcome = { state: 'finished', answer: '{"id":1}', vlResult: 1, rowName: 'Ucet' } as const;
    expect(await store.finishJournal(id, outcome)).toBe(true);
    expect(await store.finishJournal(id, outcome)).toBe(false);
    expect(await store.readJournal(id)).toMatchObject({
      state: 'finished',
      answer: '{"id":1}',
      rowName: 'Ucet',
    });
  });

  it('finishes a job only for its latest attempt: a slow worker whose lease a successor took finishes nothing (issue 19)', async () => {
    await checkJobLeaseFencing(store);
  });
});
