import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, StatementCancelledError } from '../../shared/core/database.js';
import {
  getData,
  type SignedCall,
  type WebApiContext,
  type WebApiPolicy,
} from '../../shared/core/web-api/calls.js';
import { validateEnvelope, type WebApiRequest } from '../../shared/core/web-api/envelope.js';
import { signatureHeader } from '../../shared/core/web-api/signature.js';
import { OperationFailedError } from '../../shared/core/web-api/store.js';
import { webApiHttpStatus } from '../../shared/lambda/web-api/http.js';
import { memoryIdempotencyStore } from '../support/memory-idempotency-store.js';
import { memoryWebApiStore } from '../support/memory-web-api-store.js';
import { demoPolicy, failingOperation, refusal } from '../support/web-api-core.js';

const NOW = 1_700_000_000_000;
const policy: WebApiPolicy = demoPolicy;

function setUp(overrides: Partial<typeof policy> = {}) {
  const cancelled: string[] = [];
  const memory = memoryWebApiStore({
    now: () => NOW,
    operations: {
      1001: {
        vltyp: 1001,
        procedure: 'dbo.WS_OP_SUBJECT_SEARCH',
        rowName: 'Subject',
        run: async () => [
          { ID: 1, NAZEV: 'Alfa', ICO: null, CREATED: new Date('2024-05-06T07:08:09.123Z'), AKTIVNI: true },
        ],
      },
      9002: failingOperation(
        9002,
        'dbo.WS_OP_FAIL',
        'Fail',
        () => new OperationFailedError('raised', 'Operation 9002 always fails'),
      ),
      9003: failingOperation(
        9003,
        'dbo.WS_OP_BROKEN',
        'Broken',
        () => new OperationFailedError('relation "dbo.X" does not exist', undefined),
      ),
      // Waits 5 s unless cancelled; `seen` records whether the cancellation reached it.
      9001: {
        vltyp: 9001,
        procedure: 'dbo.WS_OP_SLEEP',
        rowName: 'Sleep',
        run: (_params, signal) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve([{ slept: 5 }]), 5000);
            signal?.addEventListener('abort', () => {
              clearTimeout(timer);
              cancelled.push('9001');
              reject(new StatementCancelledError('cancelled'));
            });
          }),
      },
      // Never stops, whatever it is told: the answer must not wait for it.
      9005: {
        vltyp: 9005,
        procedure: 'dbo.WS_OP_STUCK',
        rowName: 'Stuck',
        run: () => new Promise(() => undefined),
      },
      9004: failingOperation(
        9004,
        'dbo.WS_OP_OFFLINE',
        'Offline',
        () => new DatabaseUnavailableError('gone'),
      ),
    },
  });
  const ctx: WebApiContext = {
    keys: memoryIdempotencyStore().store,
    tenant: 'demo',
    store: memory.store,
    policy: { ...policy, ...overrides },
    requestId: 'test',
    now: () => NOW,
  };
  return { ...memory, ctx, cancelled };
}

/** A call as a client signs it; `decoded` counts how often the body was decoded. */
function signed(request: unknown, overrides: Partial<SignedCall> & { hash?: string; time?: number } = {}) {
  const body = Buffer.from(JSON.stringify(request));
  const decoded = { count: 0 };
  const call: SignedCall = {
    apiKey: 'demo-api-key',
    signature: signatureHeader(overrides.hash ?? 'demo-api-hash', body, overrides.time ?? NOW / 1000),
    body,
    decode: (): WebApiRequest => {
      decoded.count += 1;
      return validateEnvelope(JSON.parse(body.toString()));
    },
    ...overrides,
  };
  return { call, decoded };
}

describe('Function: getData', () => {
  it('runs the operation, journals the call and answers with the journal id', async () => {
    const { ctx, journal } = setUp();
    const { call } = signed({ vltyp: 1001, params: [{ nazev: 'alfa' }] });
    const result = await getData(ctx, call);
    expect(result).toEqual({
      answer: {
        id: 1,
        vlResult: 1,
        data: [{ id: 1, nazev: 'Alfa', created: '2024-05-06T07:08:09', aktivni: 1 }],
      },
      rowName: 'Subject',
    });
    const entry = journal.get(1)!;
    expect(entry).toMatchObject({ applicationId: 1, vltyp: 1001, mode: 'sync', state: 'finished' });
    expect(JSON.parse(entry.request)).toEqual({ vltyp: 1001, params: [{ nazev: 'alfa' }] });
    expect(JSON.parse(entry.answer!)).toEqual(result.answer);
  });

  it.each([
    ['x-api-key', { apiKey: undefined }, /x-api-key/],
    ['x-svc-signature', { signature: undefined }, /x-svc-signature/],
    ['both', { apiKey: '', signature: '' }, /x-api-key, x-svc-signature/],
  ])('refuses a call without %s with 400/101, before anything else', async (_case, overrides, message) => {
    const { ctx, journal, calls } = setUp();
    const { call, decoded } = signed({ vltyp: 1001 }, overrides);
    const error = await refusal(getData(ctx, call));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '101']);
    expect(error.message).toMatch(message);
    expect([journal.size, calls.length, decoded.count]).toEqual([0, 0, 0]);
  });

  it.each([
    ['an unknown key', { apiKey: 'nobody' }, 401, '102'],
    ['an inactive application', { apiKey: 'inactive-api-key', hash: 'inactive-api-hash' }, 401, '102'],
    ['a signature by another key', { hash: 'other-api-hash' }, 401, '103'],
    ['a signature too old', { time: NOW / 1000 - 301 }, 401, '104'],
  ])('refuses %s and neither decodes, runs nor journals anything', async (_case, overrides, status, code) => {
    const { ctx, journal, calls, claimed } = setUp();
    const { call, decoded } = signed({ vltyp: 1001 }, overrides);
    const error = await refusal(getData(ctx, call));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([status, code]);
    expect([journal.size, calls.length, decoded.count, claimed.size]).toEqual([0, 0, 0, 0]);
  });

  it('checks the signature before it reads the body: a bad body with a bad signature is 103', async () => {
    const { ctx } = setUp();
    const body = Buffer.from('not json');
    const error = await refusal(
      getData(ctx, {
        apiKey: 'demo-api-key',
        signature: signatureHeader('wrong', body, NOW / 1000),
        body,
        decode: () => {
          throw new Error('decoded');
        },
      }),
    );
    expect(error.errorCode).toBe('103');
  });

  it('refuses the same signed request twice with 409/105 and runs it once', async () => {
    const { ctx, journal, calls } = setUp();
    const { call } = signed({ vltyp: 1001 });
    await getData(ctx, call);
    const error = await refusal(getData(ctx, call));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([409, '105']);
    expect(error.message).toMatch(/already accepted/);
    expect([journal.size, calls.length]).toEqual([1, 1]);
  });

  it('accepts a repeat when CheckReplayRequest is off', async () => {
    const { ctx, journal } = setUp({ checkReplayRequest: false });
    const { call } = signed({ vltyp: 1001 });
    await getData(ctx, call);
    await getData(ctx, call);
    expect(journal.size).toBe(2);
  });

  it('decodes the body only once the call is admitted (400/100 then), and journals nothing', async () => {
    const { ctx, journal } = setUp();
    const { call, decoded } = signed({ params: [] });
    const error = await refusal(getData(ctx, call));
    expect([webApiHttpStatus(error), error.errorCode, decoded.count, journal.size]).toEqual([
      400,
      '100',
      1,
      0,
    ]);
  });

  it('refuses an unknown vltyp with 404/110 and journals nothing', async () => {
    const { ctx, journal, calls } = setUp();
    const error = await refusal(getData(ctx, signed({ vltyp: 4242 }).call));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([404, '110']);
    expect(error.message).toMatch(/4242/);
    expect([journal.size, calls.length]).toEqual([0, 0]);
  });

  it("answers a procedure's failure with vlResult -1 and error 120 in the procedure's words, journaled failed", async () => {
    const { ctx, journal } = setUp();
    const result = await getData(ctx, signed({ vltyp: 9002 }).call);
    expect(result.answer).toEqual({
      id: 1,
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '120',
              errorMessage: 'Operation 9002 failed in the database: Operation 9002 always fails',
            },
          ],
        },
      ],
    });
    expect(journal.get(1)).toMatchObject({ state: 'failed' });
    expect(JSON.parse(journal.get(1)!.answer!)).toEqual(result.answer);
  });

  it('keeps database internals out of a 120 answer when the procedure did not raise the error itself', async () => {
    const { ctx } = setUp();
    const result = await getData(ctx, signed({ vltyp: 9003 }).call);
    expect(JSON.stringify(result.answer)).not.toContain('relation');
    expect(result.answer.data).toEqual([
      { error: [{ errorCode: '120', errorMessage: 'Operation 9003 failed in the database' }] },
    ]);
  });

  it('lets an unreachable database through as an error (503/150 at the edge)', async () => {
    const { ctx } = setUp();
    await expect(getData(ctx, signed({ vltyp: 9004 }).call)).rejects.toBeInstanceOf(DatabaseUnavailableError);
  });

  describe('synchronous time limit', () => {
    const timeLimitAnswer = (id: number, vltyp: number) => ({
      id,
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '161',
              errorMessage: `The operation (vltyp ${vltyp}, journal ${id}) did not finish within the synchronous time limit of 0.2 s and was cancelled; use getDataAsync`,
            },
          ],
        },
      ],
    });

    it('cancels an operation past the limit and answers 161 with its journal id, journaled as failed', async () => {
      const { ctx, journal, cancelled } = setUp({ syncTimeLimitSeconds: 0.2 });
      const started = Date.now();
      const result = await getData(ctx, signed({ vltyp: 9001, params: [{ seconds: 5 }] }).call);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(result.answer).toEqual(timeLimitAnswer(1, 9001));
      expect(cancelled).toEqual(['9001']);
      expect(journal.get(1)).toMatchObject({ state: 'failed' });
      expect(JSON.parse(journal.get(1)!.answer!)).toEqual(result.answer);
    });

    it('gives the same error answer to 997 for that journal id', async () => {
      const { ctx } = setUp({ syncTimeLimitSeconds: 0.2 });
      const first = await getData(ctx, signed({ vltyp: 9001 }).call);
      const later = await getData(ctx, signed({ vltyp: 997, params: [{ idws_journal: 1 }] }).call);
      expect(later.answer).toEqual({ id: 2, vlResult: 1, data: [{ resultForId: first.answer, id: 1 }] });
    });

    it('answers 161 in time even when the database does not stop', async () => {
      const { ctx, journal } = setUp({ syncTimeLimitSeconds: 0.2 });
      const started = Date.now();
      const result = await getData(ctx, signed({ vltyp: 9005 }).call);
      // The limit, then at most the grace for the cancellation to land.
      expect(Date.now() - started).toBeLessThan(2500);
      expect(result.answer).toEqual(timeLimitAnswer(1, 9005));
      expect(journal.get(1)).toMatchObject({ state: 'failed' });
    });

    it('leaves an operation that finishes within the limit alone', async () => {
      const { ctx, cancelled } = setUp({ syncTimeLimitSeconds: 0.2 });
      const result = await getData(ctx, signed({ vltyp: 1001 }).call);
      expect([result.answer.vlResult, cancelled]).toEqual([1, []]);
    });
  });
});
