/**
 * CONTRACT 5a under faults made on purpose, on the T-SQL engine with the least-privileged login
 * (npm run test:tsql): the function's process killed (SIGKILL) before the procedure wrote, while
 * it holds its write open, and after the commit; the database session killed (KILL) in the middle
 * of the procedure. Each time a retry under the same key follows, as a client's would: there is
 * exactly one DOKUMENT, and the retry answers what the first call would have answered.
 *
 * On the embedded database the database lives in the process of the functions (the local stack's
 * PGlite): a killed process takes the uncommitted transaction with it and there is no session of
 * its own to kill, so these faults exist only where the database is a server. Jobs taken over and
 * delivered twice run on both databases (tests/support/demo-operations.ts).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_SERVICE_ROLE } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { runCislo } from '../support/demo-operations.js';
import { envelope, postSigned } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

/** A test operation: waits `before` s, creates a DOKUMENT as 2001 does (`cislo`…), waits `after` s. */
const WRITE_AND_WAIT = 9301;

let stack: LocalStack;
let dir: string;
let registryFile: string;
const calls: string[] = [];

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, database: 'tsql', databaseLogin: 'service-role' });
  const admin = stack.database;
  await admin.query(`IF OBJECT_ID(N'dbo.WS_OP_TEST_WRITE_WAIT', N'P') IS NULL
    EXEC (N'CREATE PROCEDURE dbo.WS_OP_TEST_WRITE_WAIT AS RETURN 0;')`);
  await admin.query(`ALTER PROCEDURE dbo.WS_OP_TEST_WRITE_WAIT
      @params nvarchar(max)
    AS
    BEGIN
      SET NOCOUNT ON;
      DECLARE @before decimal(5, 3) = CAST(JSON_VALUE(@params, N'$[0].before') AS decimal(5, 3));
      DECLARE @after decimal(5, 3) = CAST(JSON_VALUE(@params, N'$[0].after') AS decimal(5, 3));
      EXEC dbo.WS_WAIT @seconds = @before;
      -- 2001 reads cislo, subject_id and castka of the same params and leaves the rest.
      EXEC dbo.WS_OP_DOKUMENT_CREATE @params = @params;
      EXEC dbo.WS_WAIT @seconds = @after;
    END`);
  await admin.query(`GRANT EXECUTE ON dbo.WS_OP_TEST_WRITE_WAIT TO ${LOCAL_SERVICE_ROLE}`);
  await admin.query(`GRANT EXECUTE ON dbo.WS_OP_DOKUMENT_CREATE TO ${LOCAL_SERVICE_ROLE}`);
  await admin.query(
    `IF NOT EXISTS (SELECT 1 FROM dbo.WS_OPERATION WHERE VLTYP = @p1)
       INSERT INTO dbo.WS_OPERATION (VLTYP, NAZEV, PROCEDURE_NAME, ROW_NAME, AKTIVNI)
       VALUES (@p1, N'Zápis a čekání (zkouška výpadků)', N'dbo.WS_OP_TEST_WRITE_WAIT', N'Dokument', 1)`,
    [WRITE_AND_WAIT],
  );
  dir = await mkdtemp(join(tmpdir(), 'exactly-once-faults-'));
  registryFile = join(dir, 'tenants.json');
  await writeFile(registryFile, JSON.stringify(stack.registry));
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  console.log(`exactly once under faults (tsql): ${calls.join('; ')}`);
});

let keys = 0;
const newKey = (label: string) => `${label}-${process.pid}-${Date.now().toString(36)}-${++keys}`;

const writeAndWait = (cislo: string, before: number, after: number) =>
  envelope(WRITE_AND_WAIT, [{ before, after, cislo, subject_id: 1, castka: 10 }]);

const documents = async (cislo: string) =>
  Number(
    (await stack.database.query('SELECT COUNT(*) AS n FROM dbo.DOKUMENT WHERE CISLO = @p1', [cislo]))[0]!.n,
  );

/** A `webGetData` instance in a process of its own (tests/support/web-api-process.ts), ready. */
async function functionProcess(): Promise<ChildProcess> {
  const child = fork(new URL('../support/web-api-process.ts', import.meta.url).pathname, [], {
    execArgv: ['--import', 'tsx', '--disable-warning=ExperimentalWarning'],
    env: { ...process.env, TENANT_REGISTRY_FILE: registryFile, LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the function's process exited (${code})`)));
    child.on('message', (m) => m === 'ready' && resolve());
  });
  return child;
}

const exited = (child: ChildProcess) =>
  new Promise<NodeJS.Signals | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
    else child.once('exit', (_code, signal) => resolve(signal));
  });

/** Invokes the process's handler with a keyed signed call; resolves once it says it is invoking. */
async function invoke(child: ChildProcess, body: string, key: string, dieAfterAnswer = false) {
  const answer = new Promise<APIGatewayProxyStructuredResultV2>((resolve) =>
    child.on('message', (m: { answer?: APIGatewayProxyStructuredResultV2 }) => {
      if (typeof m === 'object' && m.answer) resolve(m.answer);
    }),
  );
  const invoking = new Promise<void>((resolve) => child.on('message', (m) => m === 'invoking' && resolve()));
  const event = signedWebApiEvent('getData', body, { headers: { 'idempotency-key': key } });
  child.send({ event, dieAfterAnswer });
  await invoking;
  return answer;
}

/**
 * The client's retry under the key, re-signed, until it is answered: while the dead call's
 * session still holds the key (the engine notices a dropped client when its statement ends), it
 * is 409/108 with Retry-After, as the contract says.
 */
async function retryUntilAnswered(body: string, key: string) {
  let inProgress = 0;
  let unavailable = 0;
  for (;;) {
    const answer = await postSigned(stack.url, 'getData', body, { headers: { 'idempotency-key': key } });
    const code = answer.status >= 400 ? JSON.parse(answer.text).data[0].error[0].errorCode : undefined;
    if (answer.status === 409) {
      expect(code).toBe('108');
      inProgress++;
      await sleep(1000 * Number(answer.headers.get('retry-after')));
    } else if (answer.status === 503 && unavailable < 30) {
      // The engine (PostgreSQL underneath) restarts every session when a backend whose client
      // died mid-transaction crashes on its way out: 503/150 until it is back, as from a server
      // that restarted. A client waits and retries.
      expect(code).toBe('150');
      unavailable++;
      await sleep(1000);
    } else {
      return { ...answer, inProgress, unavailable };
    }
  }
}

const newAnswer = (text: string) =>
  expect(JSON.parse(text)).toEqual({
    id: expect.any(Number),
    vlResult: 1,
    data: [{ id: expect.any(Number) }],
  });

describe('Exactly once under faults on the T-SQL engine (CONTRACT 5a)', () => {
  it('the function killed before the procedure wrote: nothing committed; the retry runs it, one row', async () => {
    const cislo = runCislo('kill-before');
    const key = newKey('kill-before');
    const body = writeAndWait(cislo, 4, 0);
    const child = await functionProcess();
    void invoke(child, body, key);
    await sleep(1500);
    child.kill('SIGKILL');
    expect(await exited(child)).toBe('SIGKILL');
    expect(await documents(cislo)).toBe(0);
    const retry = await retryUntilAnswered(body, key);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    newAnswer(retry.text);
    expect(await documents(cislo)).toBe(1);
    calls.push(`killed before: 1 row (retries answered 409: ${retry.inProgress}, 503: ${retry.unavailable})`);
  }, 90_000);

  it('the function killed while the procedure holds its write open: rolled back; the retry runs it, one row', async () => {
    const cislo = runCislo('kill-during');
    const key = newKey('kill-during');
    const body = writeAndWait(cislo, 0.2, 6);
    const child = await functionProcess();
    void invoke(child, body, key);
    // Its DOKUMENT written (after 0.2 s), not committed (6 s to go).
    await sleep(3000);
    child.kill('SIGKILL');
    expect(await exited(child)).toBe('SIGKILL');
    const retry = await retryUntilAnswered(body, key);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    newAnswer(retry.text);
    expect(await documents(cislo)).toBe(1);
    calls.push(`killed during: 1 row (retries answered 409: ${retry.inProgress}, 503: ${retry.unavailable})`);
  }, 90_000);

  it('the function killed after the commit, its answer lost: the retry gets that answer, replayed; one row', async () => {
    const cislo = runCislo('kill-after');
    const key = newKey('kill-after');
    const body = writeAndWait(cislo, 0, 0);
    const child = await functionProcess();
    const lost = await invoke(child, body, key, true);
    expect(await exited(child)).toBe('SIGKILL');
    expect(lost.statusCode).toBe(200);
    const retry = await retryUntilAnswered(body, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(lost.body);
    newAnswer(retry.text);
    expect(await documents(cislo)).toBe(1);
    calls.push(
      `killed after the commit: the lost answer replayed, 1 row (retries answered 409: ${retry.inProgress}, 503: ${retry.unavailable})`,
    );
  }, 90_000);

  it('the database session killed mid-procedure: no row, no record; the retry runs it, one row', async () => {
    const cislo = runCislo('kill-session');
    const key = newKey('kill-session');
    const body = writeAndWait(cislo, 0.2, 5);
    const first = postSigned(stack.url, 'getData', body, { headers: { 'idempotency-key': key } });
    await sleep(2000);
    // The session holding the key's application lock (and 2001's): the one running the call. On
    // the engine an application lock is a PostgreSQL advisory lock; on SQL Server the same
    // session is sys.dm_tran_locks' request_session_id of resource_type APPLICATION.
    const holders = await stack.database.query(
      `SELECT DISTINCT pid AS spid FROM pg_catalog.pg_locks
        WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND pid <> @@SPID`,
    );
    expect(
      holders,
      JSON.stringify(
        await stack.database.query(
          `SELECT pid, objid, mode, granted, @@SPID AS me FROM pg_catalog.pg_locks WHERE locktype = 'advisory'`,
        ),
      ),
    ).toHaveLength(1);
    await stack.database.query(`KILL ${Number(holders[0]!.spid)}`);
    const failed = await first;
    // The connection lost mid-call: the database was unreachable for it (150), nothing recorded.
    expect(failed.status, failed.text).toBe(503);
    expect(JSON.parse(failed.text).data[0].error[0].errorCode).toBe('150');
    expect(await documents(cislo)).toBe(0);
    const retry = await retryUntilAnswered(body, key);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    newAnswer(retry.text);
    expect(await documents(cislo)).toBe(1);
    calls.push(
      `session killed: the call 503/150, 1 row (retries answered 409: ${retry.inProgress}, 503: ${retry.unavailable})`,
    );
  }, 90_000);
});
