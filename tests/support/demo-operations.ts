import { expect, it } from 'vitest';
import type { Database, DatabaseStatementError } from '../../shared/core/database.js';
import type { ParamObject } from '../../shared/core/web-api/envelope.js';
import { type JobDelivery, runJob } from '../../shared/core/web-api/jobs.js';
import { OperationFailedError, type WebApiStore } from '../../shared/core/web-api/store.js';
import { sqlOn } from './demo.js';

/**
 * The demo's operations of CONTRACT 5a, called through a tenant's Web API store as the service
 * calls them: 2001 (writes a DOKUMENT, answers its id) and 2002 (ends its caller's transaction).
 * The same checks for every database (embedded, T-SQL); `storeOn` makes the dialect's store on a
 * connection or a transaction.
 */
export interface DemoOperationsTarget {
  readonly db: Database;
  readonly storeOn: (connection: Pick<Database, 'query'>) => WebApiStore;
}

/** This run's own document numbers: the suites may run again on the same database. */
export const runCislo = (label: string) => `${label}-${Date.now().toString(36)}`.slice(0, 20);

const documentRow = async (db: Database, id: number) => {
  const [row] = await sqlOn(
    db,
  )`SELECT "CISLO" AS cislo, "SUBJECT_ID" AS "subjectId", "CASTKA_CELKEM" AS castka,
      "CASTKA_ZAKLAD" AS zaklad, "CASTKA_DPH" AS dph, "TYP_DOKLADU" AS typ, "MENA" AS mena, "UHRAZENO" AS uhrazeno,
      "STORNO" AS storno, "VYTVORENO" AS vytvoreno
    FROM dbo."DOKUMENT" WHERE "ID" = ${id}`;
  return row && { ...row, castka: Number(row.castka), zaklad: Number(row.zaklad), dph: Number(row.dph) };
};

const documentsNumbered = async (db: Database, cislo: string) =>
  Number((await sqlOn(db)`SELECT COUNT(*) AS n FROM dbo."DOKUMENT" WHERE "CISLO" = ${cislo}`)[0]!.n);

/** Both operations are in WS_OPERATION, under their procedures and row names. */
export async function checkDemoOperationsListed(store: WebApiStore): Promise<void> {
  expect(await store.findOperation(2001)).toEqual({
    vltyp: 2001,
    procedure: 'dbo.WS_OP_DOKUMENT_CREATE',
    rowName: 'Dokument',
  });
  expect(await store.findOperation(2002)).toEqual({
    vltyp: 2002,
    procedure: 'dbo.WS_OP_END_TRANSACTION',
    rowName: 'Konec',
  });
}

/** 2001 creates the DOKUMENT its params describe (JSON's types, or XML's strings) and answers its id. */
export async function checkDocumentCreated({ db, storeOn }: DemoOperationsTarget): Promise<void> {
  const store = storeOn(db);
  const operation = (await store.findOperation(2001))!;
  const cislo = runCislo('FV-2001');
  const rows = await store.callOperation(operation, [{ cislo, subject_id: 7, castka: 1234.5 }]);
  expect(rows).toEqual([{ id: expect.any(Number) }]);
  const id = Number(rows[0]!.id);
  expect(await documentRow(db, id)).toMatchObject({
    cislo,
    subjectId: 7,
    castka: 1234.5,
    // The demo's defaults: an issued invoice without VAT, in CZK, neither paid nor cancelled.
    zaklad: 1234.5,
    dph: 0,
    typ: 'FV',
    mena: 'CZK',
    uhrazeno: 0,
    storno: 0,
  });
  // XML sends every value as text; 1e3 and 5.0 are numbers by their value.
  const fromXml = runCislo('FV-XML');
  const [xml] = await store.callOperation(operation, [
    { cislo: fromXml, subject_id: '12', castka: '-99.90' },
  ]);
  expect(await documentRow(db, Number(xml!.id))).toMatchObject({
    cislo: fromXml,
    subjectId: 12,
    castka: -99.9,
  });
  const [exponent] = await store.callOperation(operation, [
    { cislo: runCislo('FV-E'), subject_id: 5.0, castka: 1e3 },
  ]);
  expect(await documentRow(db, Number(exponent!.id))).toMatchObject({ subjectId: 5, castka: 1000 });
  expect(Number(xml!.id)).toBeGreaterThan(id);
}

/** 2001 refuses bad or missing params in its own words (the answer's 120), writing nothing. */
export async function checkDocumentRefusals({ db, storeOn }: DemoOperationsTarget): Promise<void> {
  const store = storeOn(db);
  const operation = (await store.findOperation(2001))!;
  const cislo = runCislo('FV-BAD');
  const good = { cislo, subject_id: 1, castka: 10 };
  const cases: [ParamObject[], RegExp][] = [
    [[], /^2001 takes one params object/],
    [[good, good], /^2001 takes one params object/],
    [[{ subject_id: 1, castka: 10 }], /^cislo must be a text of 1 to 20 characters$/],
    [[{ ...good, cislo: '' }], /^cislo must be a text/],
    [[{ ...good, cislo: 'X'.repeat(21) }], /^cislo must be a text/],
    [[{ ...good, cislo: 2024 }], /^cislo must be a text/],
    [[{ cislo, castka: 10 }], /^subject_id must be the ID of a subject \(a whole number\)$/],
    [[{ ...good, subject_id: 1.5 }], /^subject_id must be/],
    [[{ ...good, subject_id: '1.0' }], /^subject_id must be/],
    [[{ ...good, subject_id: ' 1' }], /^subject_id must be/],
    [[{ ...good, subject_id: 0 }], /^subject_id must be/],
    [[{ ...good, subject_id: 999_999 }], /^subject_id 999999 is not a subject/],
    [[{ cislo, subject_id: 1 }], /^castka must be a number with at most two decimal places/],
    [[{ ...good, castka: 1.005 }], /^castka must be/],
    [[{ ...good, castka: '1,5' }], /^castka must be/],
    [[{ ...good, castka: '.5' }], /^castka must be/],
    [[{ ...good, castka: '1e3' }], /^castka must be/],
    [[{ ...good, castka: 1e13 }], /^castka must be/],
    [[{ ...good, castka: true }], /^castka must be/],
  ];
  for (const [params, message] of cases) {
    const error = await store.callOperation(operation, params).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, JSON.stringify(params)).toBeInstanceOf(OperationFailedError);
    expect((error as OperationFailedError).publicMessage, JSON.stringify(params)).toMatch(message);
  }
  expect(await documentsNumbered(db, cislo)).toBe(0);
}

/** Concurrent calls of 2001 each get a document of their own: no ID taken twice. */
export async function checkConcurrentDocuments({ db, storeOn }: DemoOperationsTarget): Promise<void> {
  const store = storeOn(db);
  const operation = (await store.findOperation(2001))!;
  const cislo = runCislo('FV-PAR');
  const ids = await Promise.all(
    Array.from({ length: 8 }, () =>
      store
        .callOperation(operation, [{ cislo, subject_id: 3, castka: 1 }])
        .then((rows) => Number(rows[0]!.id)),
    ),
  );
  expect(new Set(ids).size).toBe(8);
  expect(await documentsNumbered(db, cislo)).toBe(8);
}

/**
 * 2002 inside a transaction, as the service calls every operation: the call fails with the
 * database's own code (`ended`: 266 on T-SQL, 2D000 on the embedded database), never the
 * procedure's words, and its DOKUMENT is gone with the transaction.
 */
export async function checkTransactionEnded(
  { db, storeOn }: DemoOperationsTarget,
  ended: string,
): Promise<void> {
  const operation = (await storeOn(db).findOperation(2002))!;
  const before = await documentsNumbered(db, 'KONEC');
  const failed = await db
    .transaction((tx) => storeOn(tx).callOperation(operation, []))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  const failure = operationFailure(failed);
  expect(failure.publicMessage).toBeUndefined();
  expect((failure.cause as DatabaseStatementError).dbCode).toBe(ended);
  expect(await documentsNumbered(db, 'KONEC')).toBe(before);
}

/**
 * The operation's failure in what a transaction threw: the embedded database's `transaction`
 * passes what its callback threw on as a statement error, with the failure as its cause.
 */
export function operationFailure(error: unknown): OperationFailedError {
  for (let at = error; at instanceof Error; at = at.cause) {
    if (at instanceof OperationFailedError) return at;
  }
  throw new Error(`not an operation's failure: ${String(error)}`, { cause: error });
}

/**
 * The checks above as the tests of a database's suite: `target` once its database is open, `ended`
 * the code of a procedure that ended its caller's transaction there.
 */
export function demoOperationTests(target: () => DemoOperationsTarget, ended: string): void {
  it('lists both in WS_OPERATION', async () => {
    await checkDemoOperationsListed(target().storeOn(target().db));
  });

  it('2001 creates a DOKUMENT of its params and answers [{"id": <its ID>}]', async () => {
    await checkDocumentCreated(target());
  });

  it('2001 refuses bad or missing params in its own words, writing nothing', async () => {
    await checkDocumentRefusals(target());
  });

  it('2001 called by several calls at once takes a new ID for each', async () => {
    await checkConcurrentDocuments(target());
  });

  it(`2002 inside a transaction fails with ${ended}, its DOKUMENT gone with the transaction`, async () => {
    await checkTransactionEnded(target(), ended);
  });

  it("2001 as a job taken over mid-job: the slow worker's DOKUMENT rolls back with its fenced answer; one row", async () => {
    await checkJobTakenOverRunsOnce(target());
  });

  it('2001 as a job delivered twice at once, then again: one DOKUMENT, one answer', async () => {
    await checkJobDeliveredTwiceRunsOnce(target());
  });
}

const delivery: JobDelivery = { receiveCount: 1, maxAttempts: 3, finalReceive: false, timeLimitMs: 20_000 };

/** A getDataAsync job of 2001 creating the DOKUMENT `cislo`, journaled as queued. */
async function queuedDocumentJob(store: WebApiStore, cislo: string) {
  const request = { vltyp: 2001, params: [{ cislo, subject_id: 1, castka: 10 }] };
  const journalId = await store.openJournal({
    applicationId: 1,
    vltyp: 2001,
    mode: 'async',
    request: JSON.stringify(request),
    requestId: `job-${cislo}`,
  });
  return { tenant: 'demo', journalId, requestId: `job-${cislo}` };
}

/**
 * CONTRACT 5a, jobs: a worker takes the job (attempt 1) and stalls before its procedure commits;
 * its lease lapses, a successor takes the job over (attempt 2), runs 2001 and finishes it. The
 * slow worker then runs its procedure too, but its answer is fenced by its attempt, so its
 * DOKUMENT rolls back with it: one row, the successor's answer.
 */
export async function checkJobTakenOverRunsOnce({ db, storeOn }: DemoOperationsTarget): Promise<void> {
  const store = storeOn(db);
  const cislo = runCislo('LEASE');
  const job = await queuedDocumentJob(store, cislo);
  let resume!: () => void;
  const stalled = new Promise<void>((resolve) => {
    resume = resolve;
  });
  // The slow worker: the real store, held up once it has taken the job (a worker paused by the
  // runtime, a long GC, a network stall) until its successor has finished.
  const slowStore: WebApiStore = {
    ...store,
    async startAttempt(id, leaseSeconds, maxAttempts) {
      const entry = await store.startAttempt(id, leaseSeconds, maxAttempts);
      await stalled;
      return entry;
    },
  };
  const said: unknown[] = [];
  const log = Object.fromEntries(
    ['debug', 'info', 'warn', 'error'].map((level) => [
      level,
      (...args: unknown[]) => said.push([level, ...args]),
    ]),
  ) as never;
  const slow = runJob({ store: slowStore, leaseSeconds: 1, requestId: 'slow', log }, job, delivery);
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  const successor = await runJob({ store, leaseSeconds: 60, requestId: 'successor' }, job, delivery);
  expect(successor).toBe('finished');
  resume();
  expect(await slow, JSON.stringify(said)).toBe('ended');
  expect(await documentsNumbered(db, cislo)).toBe(1);
  const entry = (await store.readJournal(job.journalId))!;
  expect(entry).toMatchObject({ state: 'finished', attempts: 2 });
  const [created] = JSON.parse(entry.answer!).data as { id: number }[];
  expect(await documentRow(db, created!.id)).toMatchObject({ cislo });
}

/** CONTRACT 5a, jobs: SQS delivers a job's message twice at once, and once more later: one run. */
export async function checkJobDeliveredTwiceRunsOnce({ db, storeOn }: DemoOperationsTarget): Promise<void> {
  const store = storeOn(db);
  const cislo = runCislo('TWICE');
  const job = await queuedDocumentJob(store, cislo);
  const ctx = { store, leaseSeconds: 60, requestId: 'twice' };
  const outcomes = await Promise.all([runJob(ctx, job, delivery), runJob(ctx, job, delivery)]);
  expect(outcomes).toContain('finished');
  expect(outcomes.filter((o) => o === 'finished')).toHaveLength(1);
  const answer = (await store.readJournal(job.journalId))!.answer;
  // The third delivery, after the job ended: nothing runs, the answer stays.
  expect(await runJob(ctx, job, { ...delivery, receiveCount: 3 })).not.toBe('finished');
  expect(await documentsNumbered(db, cislo)).toBe(1);
  expect((await store.readJournal(job.journalId))!.answer).toBe(answer);
}
