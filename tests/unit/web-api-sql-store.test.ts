import { describe, expect, it } from 'vitest';
import { embeddedDialect } from '../../shared/adapters/embedded/dialect.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import { procedureReference, tenantDigest } from '../../shared/adapters/sql-common/web-api-store.js';
import { DatabaseStatementError, type Row } from '../../shared/core/database.js';
import { OperationFailedError } from '../../shared/core/web-api/store.js';
import { recordingDatabase } from '../support/recording-database.js';

/** A SQL Server database that records statements and answers each with the next of `answers`. */
const recordingMssql = (answers: (Row[] | Error)[] = []) =>
  recordingDatabase(mssqlDialect, {
    compactSql: true,
    answer: () => {
      const answer = answers.shift() ?? [];
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });

const operation = { vltyp: 9002, procedure: 'dbo.WS_OP_FAIL', rowName: 'Fail' };

describe('Function: createMssqlWebApiStore', () => {
  it("looks a key up in the ERP's register with a parameter and accepts only the exact key (SQL Server compares case-insensitively)", async () => {
    const row = { id: 1, apiKey: 'demo-api-key', apiHash: 'demo-api-hash', active: 1 };
    const { db, statements } = recordingMssql([[row], [row]]);
    const store = createMssqlWebApiStore(db, 'demo');
    expect(await store.findApplication('demo-api-key')).toEqual({
      id: 1,
      apiHashes: ['demo-api-hash'],
      active: true,
    });
    expect(await store.findApplication('DEMO-API-KEY')).toBeUndefined();
    expect(statements[0]).toEqual({
      sql: 'SELECT ID AS id, API_KEY AS apiKey, API_HASH AS apiHash, AKTIVNI AS active FROM dbo.WS_APPLICATION WHERE API_KEY = @p1',
      params: ['demo-api-key'],
    });
  });

  it('claims a request in one batch that takes over an expired row or inserts, refusing on 2627/2601', async () => {
    const { db, statements } = recordingMssql([[{ accepted: 0 }], [{ accepted: 1 }]]);
    const store = createMssqlWebApiStore(db, 'demo');
    expect(await store.claimRequest(1, 'a'.repeat(64), 300)).toBe(false);
    expect(await store.claimRequest(1, 'b'.repeat(64), 300)).toBe(true);
    const { sql, params } = statements[0]!;
    // The tenant is in the digest kept: tenants sharing a database never take each other's for replays.
    expect(params).toEqual([1, tenantDigest('demo', 'a'.repeat(64)), 300]);
    expect(tenantDigest('demo', 'a'.repeat(64))).not.toBe(tenantDigest('acme', 'a'.repeat(64)));
    expect(sql).toContain('UPDATE dbo.WS_REPLAY_GUARD SET EXPIRES_AT = DATEADD(second, @p3, @now)');
    expect(sql).toContain('AND EXPIRES_AT <= @now');
    expect(sql).toContain('INSERT INTO dbo.WS_REPLAY_GUARD (APPLICATION_ID, REQUEST_DIGEST, EXPIRES_AT)');
    expect(sql).toContain('IF ERROR_NUMBER() NOT IN (2627, 2601) THROW;');
    expect(sql).toContain('SELECT CAST(@accepted AS int) AS accepted;');
  });

  it('claims and journals in one batch: the journal row only when the claim was accepted', async () => {
    const { db, statements } = recordingMssql([[], [{ id: 41 }]]);
    const store = createMssqlWebApiStore(db, 'demo');
    const claim = { applicationId: 1, requestDigest: 'a'.repeat(64), holdSeconds: 300 };
    const opening = {
      applicationId: 1,
      vltyp: 1001,
      mode: 'sync' as const,
      request: '{}',
      requestId: 'r',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    };
    expect(await store.claimAndOpenJournal(claim, opening)).toBeUndefined();
    expect(await store.claimAndOpenJournal(claim, opening)).toBe(41);
    // One round trip per call (a sweep of expired claims may follow an accepted one now and then).
    expect(statements[1]!.sql).toBe(statements[0]!.sql);
    const { sql, params } = statements[0]!;
    expect(params).toEqual([
      1,
      tenantDigest('demo', 'a'.repeat(64)),
      300,
      1001,
      'sync',
      '{}',
      'r',
      'demo',
      '4bf92f3577b34da6a3ce929d0e0e4736',
    ]);
    expect(sql).toContain('INSERT INTO dbo.WS_REPLAY_GUARD (APPLICATION_ID, REQUEST_DIGEST, EXPIRES_AT)');
    // The journal row and whose call it is, in which trace (SVC_JOURNAL), with the claim.
    expect(sql).toContain(
      'IF @accepted = 1 BEGIN INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID, VLTYP, CALL_MODE, REQUEST, REQUEST_ID) VALUES (@p1, @p4, @p5, @p6, @p7); SET @id = CAST(SCOPE_IDENTITY() AS int); INSERT INTO dbo.SVC_JOURNAL (JOURNAL_ID, TENANT, TRACE_ID) VALUES (@id, @p8, @p9); END',
    );
    // One transaction: a journal row that cannot be written takes the claim back with it
    // (on the engine: web-api-mssql.test.ts).
    // XACT_ABORT on for the batch, so that an attention cannot leave the transaction open, and
    // set back on every way out (the T-SQL engine keeps a SET on the pooled session).
    expect(sql).toMatch(
      /^DECLARE @id int, @xactAbortWas int = @@OPTIONS & 16384; SET XACT_ABORT ON; BEGIN TRY BEGIN TRANSACTION; .* COMMIT TRANSACTION; .* BEGIN CATCH IF XACT_STATE\(\) <> 0 ROLLBACK TRANSACTION; IF @xactAbortWas = 0 SET XACT_ABORT OFF; THROW; END CATCH IF @xactAbortWas = 0 SET XACT_ABORT OFF; IF @id IS NOT NULL SELECT @id AS id;$/,
    );
  });

  it('calls an operation as EXEC with the params as one JSON argument', async () => {
    const { db, statements } = recordingMssql([[{ id: 1 }]]);
    await createMssqlWebApiStore(db, 'demo').callOperation(
      { ...operation, procedure: 'WS_OP_SUBJECT_SEARCH' },
      [{ nazev: 'Alfa', castka: '1234.50' }],
    );
    expect(statements[0]).toEqual({
      sql: 'EXEC [dbo].[WS_OP_SUBJECT_SEARCH] @params = @p1',
      params: ['[{"nazev":"Alfa","castka":"1234.50"}]'],
    });
  });

  it("passes on a procedure's own error (number ≥ 50000) and hides any other", async () => {
    const own = new DatabaseStatementError('Operation 9002 always fails', '50002');
    const other = new DatabaseStatementError("Invalid object name 'dbo.X'.", '208');
    const { db } = recordingMssql([own, other]);
    const store = createMssqlWebApiStore(db, 'demo');
    const first = await store.callOperation(operation, []).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(OperationFailedError);
    expect((first as OperationFailedError).publicMessage).toBe('Operation 9002 always fails');
    const second = await store.callOperation(operation, []).catch((error: unknown) => error);
    expect((second as OperationFailedError).publicMessage).toBeUndefined();
  });

  it('journals a call with whose it is, in one transaction, and ends only a running entry', async () => {
    const { db, statements } = recordingMssql([[{ id: 41 }], []]);
    const store = createMssqlWebApiStore(db, 'demo');
    expect(
      await store.openJournal({ applicationId: 1, vltyp: 7, mode: 'async', request: '{}', requestId: 'r' }),
    ).toBe(41);
    expect(
      await store.finishJournal(41, { state: 'finished', answer: '{}', vlResult: 1, rowName: undefined }),
    ).toBe(false);
    expect(statements[0]!.sql).toContain(
      'BEGIN TRANSACTION; INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID, VLTYP, CALL_MODE, REQUEST, REQUEST_ID) VALUES (@p1, @p2, @p3, @p4, @p5); SET @id = CAST(SCOPE_IDENTITY() AS int); INSERT INTO dbo.SVC_JOURNAL (JOURNAL_ID, TENANT, TRACE_ID) VALUES (@id, @p6, @p7); IF XACT_STATE() = 1 COMMIT TRANSACTION;',
    );
    // Without a trace id (none known), the column stays NULL.
    expect(statements[0]!.params).toEqual([1, 7, 'async', '{}', 'r', 'demo', null]);
    expect(statements[1]!.sql).toContain("WHERE ID = @p1 AND STATE = N'running'");
    expect(statements[1]!.params).toEqual([41, 'finished', '{}', 1, null]);
  });

  it('leases a job only when it runs, no live lease is held and it has attempts left', async () => {
    const { db, statements } = recordingMssql([[]]);
    expect(await createMssqlWebApiStore(db, 'demo').startAttempt(5, 90, 3)).toBeUndefined();
    expect(statements[0]!.sql).toContain(
      "WHERE ID = @p1 AND STATE = N'running' AND (LEASE_UNTIL IS NULL OR LEASE_UNTIL <= SYSUTCDATETIME())",
    );
    expect(statements[0]!.sql).toContain('SET ATTEMPTS = ATTEMPTS + 1');
    expect(statements[0]!.sql).toContain('AND ATTEMPTS < @p3');
    expect(statements[0]!.params).toEqual([5, 90, 3]);
  });

  it('reads whether a lease is held by the database clock', async () => {
    const { db, statements } = recordingMssql([
      [
        {
          id: 5,
          applicationId: 1,
          vltyp: 7,
          state: 'running',
          request: '{}',
          answer: null,
          rowName: null,
          attempts: 3,
          ageSeconds: 12.5,
          leaseHeld: 0,
        },
      ],
    ]);
    expect(await createMssqlWebApiStore(db, 'demo').readJournal(5)).toMatchObject({
      attempts: 3,
      leaseHeld: false,
    });
    expect(statements[0]!.sql).toContain(
      'CASE WHEN LEASE_UNTIL > SYSUTCDATETIME() THEN 1 ELSE 0 END AS leaseHeld',
    );
  });
});

describe('Function: procedureReference', () => {
  it('quotes NAME and schema.NAME for each dialect', () => {
    expect(procedureReference(mssqlDialect.quoteIdent, 'dbo.WS_OP_SLEEP')).toBe('[dbo].[WS_OP_SLEEP]');
    expect(procedureReference(embeddedDialect.quoteIdent, 'WS_OP_SLEEP')).toBe('"dbo"."WS_OP_SLEEP"');
  });

  it.each(['dbo.WS_OP; DROP TABLE x', 'a.b.c', '[dbo].[X]', 'x y', ''])('refuses %j', (name) => {
    expect(() => procedureReference(mssqlDialect.quoteIdent, name)).toThrow(/not NAME or schema.NAME/);
  });
});
