import { describe, expect, it, vi } from 'vitest';
import { DatabaseUnavailableError, StatementCancelledError } from '../../shared/core/database.js';
import { getDataAsync, type JobQueue, type WebApiJob } from '../../shared/core/web-api/async-calls.js';
import { getData, type SignedCall, type WebApiContext } from '../../shared/core/web-api/calls.js';
import { validateEnvelope } from '../../shared/core/web-api/envelope.js';
import { type JobDelivery, parseWebApiJob, runJob } from '../../shared/core/web-api/jobs.js';
import { signatureHeader } from '../../shared/core/web-api/signature.js';
import { OperationFailedError } from '../../shared/core/web-api/store.js';
import { webApiHttpStatus } from '../../shared/lambda/web-api/http.js';
import { memoryIdempotencyStore } from '../support/memory-idempotency-store.js';
import { memoryWebApiStore } from '../support/memory-web-api-store.js';
import { failingOperation, refusal } from '../support/web-api-core.js';

let calls = 0;

/** A signed call of the demo application; every one is a new request (its own time stamp). */
function signed(request: unknown, apiKey = 'demo-api-key', apiHash = 'demo-api-hash'): SignedCall {
  const body = Buffer.from(JSON.stringify(request));
  return {
    apiKey,
    signature: signatureHeader(apiHash, body, Math.floor(Date.now() / 1000) - (calls++ % 100)),
    body,
    decode: () => validateEnvelope(JSON.parse(body.toString())),
  };
}

function setUp(options: { timeoutSeconds?: number; staleSeconds?: number; now?: () => number } = {}) {
  const gate: { release: () => void; failures: number; cancelled: number } = {
    release: () => undefined,
    failures: 0,
    cancelled: 0,
  };
  const memory = memoryWebApiStore({
    now: options.now,
    applications: {
      'demo-api-key': { id: 1, apiHashes: ['demo-api-hash'], active: true },
      'other-api-key': { id: 2, apiHashes: ['other-api-hash'], active: true },
    },
    operations: {
      7: {
        vltyp: 7,
        procedure: 'dbo.WS_OP_UCET_SEARCH',
        rowName: 'Ucet',
        run: async () => [{ KOD_UCTU: '211000' }],
      },
      9001: {
        vltyp: 9001,
        procedure: 'dbo.WS_OP_SLEEP',
        rowName: 'Sleep',
        // Ends when the test releases it, or when it is cancelled.
        run: (_params, signal) =>
          new Promise((resolve, reject) => {
            gate.release = () => resolve([{ slept: 5 }]);
            signal?.addEventListener('abort', () => {
              gate.cancelled += 1;
              reject(new StatementCancelledError('cancelled'));
            });
          }),
      },
      9002: failingOperation(
        9002,
        'dbo.WS_OP_FAIL',
        'Fail',
        () => new OperationFailedError('raised', 'always fails'),
      ),
      9003: failingOperation(9003, 'dbo.WS_OP_FLAKY', 'Flaky', () => {
        gate.failures += 1;
        return new DatabaseUnavailableError('connection reset');
      }),
    },
  });
  const ctx: WebApiContext = {
    keys: memoryIdempotencyStore().store,
    tenant: 'demo',
    store: memory.store,
    policy: {
      requestMaxSecValidity: 300,
      checkReplayRequest: true,
      replayRequestTime: 300,
      commandTimeoutAsyncSeconds: options.timeoutSeconds ?? 2,
      jobStaleSeconds: options.staleSeconds ?? 1800,
      syncTimeLimitSeconds: 25,
    },
    requestId: 'test',
    now: options.now,
  };
  const jobs: WebApiJob[] = [];
  const jobOutcomes: string[] = [];
  const jobCtx = {
    store: memory.store,
    leaseSeconds: 90,
    requestId: 'worker',
    metrics: {
      count: (values: Record<string, number>, sets: readonly Record<string, string>[]) => {
        if (values.WebApiJobs) jobOutcomes.push(sets[0]!.outcome!);
      },
    },
  };
  /** A delivery by the queue: its receive count, and whether the queue will not hand it out again. */
  const delivery = (receiveCount = 1, finalReceive = false): JobDelivery => ({
    receiveCount,
    maxAttempts: 3,
    finalReceive,
    timeLimitMs: 60_000,
  });
  /** A queue whose worker runs every job at once, on the same store. */
  const workingQueue: JobQueue = {
    async enqueue(job) {
      jobs.push(job);
      void runJob(jobCtx, job, delivery());
    },
  };
  /** A queue whose jobs wait for the test to run them. */
  const idleQueue: JobQueue = {
    async enqueue(job) {
      jobs.push(job);
    },
  };
  return { ...memory, ctx, jobs, jobCtx, jobOutcomes, delivery, gate, workingQueue, idleQueue };
}

describe('Function: getDataAsync', () => {
  it('journals the call as running, queues it and answers the result once the worker has finished it', async () => {
    const { ctx, jobs, journal, workingQueue } = setUp();
    const result = await getDataAsync(ctx, signed({ vltyp: 7 }), workingQueue);
    expect(jobs).toEqual([{ tenant: 'demo', journalId: 1, requestId: 'test' }]);
    expect(result).toEqual({
      answer: { id: 1, vlResult: 1, data: [{ kod_uctu: '211000' }] },
      rowName: 'Ucet',
    });
    expect(journal.get(1)).toMatchObject({ mode: 'async', state: 'finished', attempts: 1 });
  });

  it('counts CommandTimeoutAsync from the request’s arrival, not from after its statements (issue 19)', async () => {
    // CommandTimeoutAsync 20: a request that arrived 20 s ago (its signature, replay and journal
    // statements slow under load) has no wait left. On main it waited another 20 s from here.
    const { ctx, store, idleQueue } = setUp({ timeoutSeconds: 20 });
    let journalReads = 0;
    const counting = {
      ...ctx,
      store: {
        ...store,
        readJournal: (id: number) => {
          journalReads += 1;
          return store.readJournal(id);
        },
      },
      arrivedAt: Date.now() - 20_000,
    };
    const result = await getDataAsync(counting, signed({ vltyp: 9001, params: [{ seconds: 5 }] }), idleQueue);
    expect(result.answer).toMatchObject({ vlResult: -2, data: [{ error: [{ errorCode: '160' }] }] });
    // One look at the journal, then the time was up.
    expect(journalReads).toBe(1);
  }, 5_000);

  it('answers vlResult -2 with error 160 (a string) and the journal id after CommandTimeoutAsync', async () => {
    const { ctx, journal, idleQueue } = setUp({ timeoutSeconds: 0.3 });
    const started = Date.now();
    const result = await getDataAsync(ctx, signed({ vltyp: 9001, params: [{ seconds: 5 }] }), idleQueue);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(result.answer).toEqual({
      id: 1,
      vlResult: -2,
      data: [
        {
          error: [
            {
              errorCode: '160',
              errorMessage:
                'The requested operation (vltyp 9001, journal 1) did not finish within the time limit',
            },
          ],
        },
      ],
    });
    expect(journal.get(1)?.state).toBe('running');
  });

  it('polls the journal with growing pauses, not in a busy loop', async () => {
    const { ctx, store, idleQueue } = setUp({ timeoutSeconds: 1.5 });
    let reads = 0;
    const counting = {
      ...store,
      readJournal: (id: number) => {
        reads += 1;
        return store.readJournal(id);
      },
    };
    await getDataAsync({ ...ctx, store: counting }, signed({ vltyp: 9001 }), idleQueue);
    // 5, 7.5, 11, 17, 25 … 432, 500 ms: about 14 reads in 1.5 s (a busy loop would make hundreds).
    expect(reads).toBeGreaterThanOrEqual(10);
    expect(reads).toBeLessThanOrEqual(18);
  });

  it('answers the failure of the operation as the worker journaled it (vlResult -1, 120)', async () => {
    const { ctx, workingQueue } = setUp();
    const result = await getDataAsync(ctx, signed({ vltyp: 9002 }), workingQueue);
    expect(result.answer).toMatchObject({ id: 1, vlResult: -1 });
    expect(JSON.stringify(result.answer)).toContain('"errorCode":"120"');
  });

  it('ends the journal entry as failed when the job cannot be queued, and fails the call', async () => {
    const { ctx, journal } = setUp();
    const broken: JobQueue = {
      enqueue: async () => {
        throw new Error('queue unreachable');
      },
    };
    await expect(getDataAsync(ctx, signed({ vltyp: 7 }), broken)).rejects.toThrow('queue unreachable');
    expect(journal.get(1)).toMatchObject({ state: 'failed' });
    expect(journal.get(1)?.answer).toContain('"errorCode":"190"');
  });

  it('refuses an unknown vltyp with 404/110 before anything is journaled or queued', async () => {
    const { ctx, journal, jobs, idleQueue } = setUp();
    const error = await refusal(getDataAsync(ctx, signed({ vltyp: 4242 }), idleQueue));
    expect([webApiHttpStatus(error), error.errorCode, journal.size, jobs.length]).toEqual([404, '110', 0, 0]);
  });
});

describe('Function: resultForId (vltyp 997)', () => {
  it('answers "still running" with resultForId error 160 (a number) and idws_journal, journaled too', async () => {
    const { ctx, journal, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    const started = await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    const j = started.answer.id!;
    const result = await getData(ctx, signed({ vltyp: 997, params: [{ idws_journal: j }] }));
    expect(result.answer).toEqual({
      id: 2,
      vlResult: 1,
      data: [
        {
          resultForId: [
            {
              errorCode: 160,
              errorMessage: `The requested operation (journal ${j}) has not finished yet; ask again later`,
            },
          ],
          idws_journal: j,
        },
      ],
    });
    expect(journal.get(2)).toMatchObject({ vltyp: 997, mode: 'sync', state: 'finished' });
    expect(JSON.parse(journal.get(2)!.answer!)).toEqual(result.answer);
  });

  it('answers the complete original answer once the job has finished, on getData and getDataAsync', async () => {
    const { ctx, jobs, jobCtx, delivery, gate, calls, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    const started = await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    const running = runJob(jobCtx, jobs[0]!, delivery());
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    gate.release();
    expect(await running).toBe('finished');
    const j = started.answer.id!;
    const original = { id: j, vlResult: 1, data: [{ slept: 5 }] };
    const viaGetData = await getData(ctx, signed({ vltyp: 997, params: [{ idws_journal: j }] }));
    expect(viaGetData).toEqual({
      answer: { id: 2, vlResult: 1, data: [{ resultForId: original, id: j }] },
      rowName: 'Sleep',
    });
    // On getDataAsync it is answered at once, without a job.
    const viaAsync = await getDataAsync(
      ctx,
      signed({ vltyp: 997, params: [{ idws_journal: String(j) }] }),
      idleQueue,
    );
    expect(viaAsync.answer).toEqual({ id: 3, vlResult: 1, data: [{ resultForId: original, id: j }] });
    expect(jobs).toHaveLength(1);
  });

  it("refuses another application's journal id, or one that does not exist, with 404/111, journaling nothing", async () => {
    const { ctx, journal, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    for (const [id, key, hash] of [
      [1, 'other-api-key', 'other-api-hash'],
      [99, 'demo-api-key', 'demo-api-hash'],
      // (0 is no positive integer: 400/100, tests/unit/web-api-codec.test.ts.)
      [2 ** 40, 'demo-api-key', 'demo-api-hash'],
    ] as const) {
      const error = await refusal(
        getData(ctx, signed({ vltyp: 997, params: [{ idws_journal: id }] }, key, hash)),
      );
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([404, '111']);
    }
    expect(journal.size).toBe(1);
  });

  it('refuses 997 without an integer idws_journal with 400/100', async () => {
    const { ctx } = setUp();
    for (const params of [[], [{ idws_journal: 'abc' }], [{ idws_journal: 1.5 }], [{ idws: 1 }]]) {
      const error = await refusal(getData(ctx, signed({ vltyp: 997, params })));
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
      expect(error.message).toMatch(/idws_journal/);
    }
  });

  it('ends a job that has been running longer than any worker runs as failed (170), so 997 returns its error', async () => {
    let offset = 0;
    const { ctx, journal, idleQueue } = setUp({
      timeoutSeconds: 0.05,
      staleSeconds: 60,
      now: () => Date.now() + offset,
    });
    await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    offset = 61_000;
    const result = await getData(ctx, signed({ vltyp: 997, params: [{ idws_journal: 1 }] }));
    const [entry] = result.answer.data as {
      resultForId: { id: number; vlResult: number; data: unknown[] };
    }[];
    expect(entry!.resultForId).toMatchObject({ id: 1, vlResult: -1 });
    expect(JSON.stringify(entry!.resultForId)).toContain('"errorCode":"170"');
    expect(journal.get(1)?.state).toBe('failed');
  });
});

describe('Function: runJob', () => {
  it('does not run a job that has already ended (a redelivered message)', async () => {
    const { ctx, jobs, jobCtx, delivery, calls, workingQueue } = setUp();
    await getDataAsync(ctx, signed({ vltyp: 7 }), workingQueue);
    expect(await runJob(jobCtx, jobs[0]!, delivery(2))).toBe('ended');
    expect(calls).toHaveLength(1);
  });

  it('leaves a job another worker holds to it: another delivery later, none after the last', async () => {
    const { ctx, jobs, jobCtx, delivery, gate, calls, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    const first = runJob(jobCtx, jobs[0]!, delivery(1));
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    expect(await runJob(jobCtx, jobs[0]!, delivery(2))).toBe('retry');
    expect(await runJob(jobCtx, jobs[0]!, delivery(3, true))).toBe('held');
    gate.release();
    expect(await first).toBe('finished');
    expect(calls).toHaveLength(1);
  });

  it('asks for another delivery when the database fails, and ends the job as failed (150) on the last', async () => {
    const { ctx, jobs, jobCtx, jobOutcomes, delivery, journal, gate, idleQueue } = setUp({
      timeoutSeconds: 0.05,
    });
    await getDataAsync(ctx, signed({ vltyp: 9003 }), idleQueue);
    expect(await runJob(jobCtx, jobs[0]!, delivery(1))).toBe('retry');
    // The lease is given back, so the next delivery can start at once.
    expect(await runJob(jobCtx, jobs[0]!, delivery(2))).toBe('retry');
    expect(journal.get(1)).toMatchObject({ state: 'running', attempts: 2 });
    expect(await runJob(jobCtx, jobs[0]!, delivery(3))).toBe('abandoned');
    expect(gate.failures).toBe(3);
    expect(journal.get(1)).toMatchObject({ state: 'failed', attempts: 3 });
    expect(JSON.parse(journal.get(1)!.answer!).data[0].error[0].errorCode).toBe('150');
    // Each delivery counted once by its outcome (the WebApiJobs metric).
    expect(jobOutcomes).toEqual(['retry', 'retry', 'abandoned']);
  });

  it('counts attempts in the journal, not receives: a job received often before it ran gets every attempt', async () => {
    const { ctx, jobs, jobCtx, delivery, journal, gate, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 9003 }), idleQueue);
    const attempts: number[] = [];
    const counted = (receiveCount: number) => ({
      ...delivery(receiveCount),
      onAttempt: (n: number) => attempts.push(n),
    });
    // Receive counts inflated by receives that never reached a worker (a throttled consumer).
    expect(await runJob(jobCtx, jobs[0]!, counted(4))).toBe('retry');
    expect(await runJob(jobCtx, jobs[0]!, counted(6))).toBe('retry');
    expect(journal.get(1)).toMatchObject({ state: 'running', attempts: 2 });
    expect(await runJob(jobCtx, jobs[0]!, counted(9))).toBe('abandoned');
    expect(attempts).toEqual([1, 2, 3]);
    expect(gate.failures).toBe(3);
    expect(journal.get(1)).toMatchObject({ state: 'failed', attempts: 3 });
  });

  it("makes the queue's final receive the last attempt, whatever the journal counts", async () => {
    const { ctx, jobs, jobCtx, delivery, journal, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 9003 }), idleQueue);
    expect(await runJob(jobCtx, jobs[0]!, delivery(10, true))).toBe('abandoned');
    expect(journal.get(1)).toMatchObject({ state: 'failed', attempts: 1 });
  });

  it('ends unrun a job found with every attempt made and still running (its workers stopped)', async () => {
    const { ctx, jobs, jobCtx, delivery, journal, calls, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 7 }), idleQueue);
    // Three workers took it and died: the attempts are counted, the leases lapsed.
    Object.assign(journal.get(1)!, { attempts: 3, leaseUntil: 0 });
    expect(await runJob(jobCtx, jobs[0]!, delivery(4))).toBe('abandoned');
    expect(calls).toHaveLength(0);
    expect(journal.get(1)).toMatchObject({ state: 'failed', attempts: 3 });
    expect(JSON.parse(journal.get(1)!.answer!).data[0].error[0]).toEqual({
      errorCode: '170',
      errorMessage: 'The job could not be completed after 3 attempts',
    });
  });

  it('does not retry an operation that failed inside the database (120)', async () => {
    const { ctx, jobs, jobCtx, delivery, journal, idleQueue } = setUp({ timeoutSeconds: 0.05 });
    await getDataAsync(ctx, signed({ vltyp: 9002 }), idleQueue);
    expect(await runJob(jobCtx, jobs[0]!, delivery(1))).toBe('failed');
    expect(journal.get(1)?.answer).toContain('"errorCode":"120"');
  });

  it("ends a job that outruns the worker's time limit as failed (170) and cancels it", async () => {
    const setUpGate = setUp({ timeoutSeconds: 0.05 });
    const { ctx, jobs, jobCtx, journal, idleQueue } = setUpGate;
    await getDataAsync(ctx, signed({ vltyp: 9001 }), idleQueue);
    const { gate } = setUpGate;
    const outcome = await runJob(jobCtx, jobs[0]!, {
      receiveCount: 1,
      maxAttempts: 3,
      finalReceive: false,
      timeLimitMs: 50,
    });
    expect(outcome).toBe('time_limit');
    // The operation was cancelled in the database, not left running behind the failed answer.
    expect(gate.cancelled).toBe(1);
    expect(journal.get(1)?.state).toBe('failed');
    expect(journal.get(1)?.answer).toContain("did not finish within the worker's time limit");
  });
});

describe('Function: parseWebApiJob', () => {
  it('reads a job and refuses anything else', () => {
    expect(parseWebApiJob('{"tenant":"demo","journalId":5,"requestId":"r"}')).toEqual({
      tenant: 'demo',
      journalId: 5,
      requestId: 'r',
    });
    for (const body of ['', 'x', '{}', '{"tenant":"demo","journalId":0}', '{"tenant":1,"journalId":5}']) {
      expect(parseWebApiJob(body)).toBeUndefined();
    }
  });
});
