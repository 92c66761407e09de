/**
 * CONTRACT 8a, "findable from the Web API journal (WS_JOURNAL id <-> trace id: in an object the
 * service owns when the journal is the ERP's)": every journaled call's trace id is kept in
 * SVC_JOURNAL, written with its WS_JOURNAL row, on the database the stack runs on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { parseTraceparent } from '../../shared/core/trace-context.js';
import { DEMO_AUTH } from '../support/demo.js';
import { envelope, postSigned } from '../support/web-api.js';

let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
});
afterAll(async () => {
  await stack?.stop();
});

function callerTrace() {
  const traceId = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex');
  const spanId = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString('hex');
  return { traceId, traceparent: `00-${traceId}-${spanId}-01` };
}

const answerTraceId = (response: { headers: Headers }) =>
  parseTraceparent(response.headers.get('traceparent') ?? undefined)?.traceId;

const journalId = (answer: { text: string }) => (JSON.parse(answer.text) as { id: number }).id;

describe('journal id <-> trace id (CONTRACT 8a)', () => {
  const statements = () => {
    const embedded = stack.database.dialect.name === 'embedded';
    return {
      byJournal: embedded
        ? 'SELECT "TRACE_ID" AS "traceId" FROM dbo."SVC_JOURNAL" WHERE "JOURNAL_ID" = $1'
        : 'SELECT TRACE_ID AS traceId FROM dbo.SVC_JOURNAL WHERE JOURNAL_ID = @p1',
      byTrace: embedded
        ? 'SELECT "JOURNAL_ID" AS "journalId" FROM dbo."SVC_JOURNAL" WHERE "TRACE_ID" = $1 ORDER BY 1'
        : 'SELECT JOURNAL_ID AS journalId FROM dbo.SVC_JOURNAL WHERE TRACE_ID = @p1 ORDER BY 1',
    };
  };
  const traceOf = async (id: number) =>
    String((await stack.database.query(statements().byJournal, [id]))[0]?.traceId ?? '').trim();
  const journalsOf = async (traceId: string) =>
    (await stack.database.query(statements().byTrace, [traceId])).map((row) => Number(row.journalId));

  it("keeps a journaled call's trace id beside the ERP's WS_JOURNAL, both ways, sync and async", async () => {
    const caller = callerTrace();
    const headers = { traceparent: caller.traceparent };
    const sync = await postSigned(stack.url, 'getData', envelope(1001, [{ ico: '25596641' }]), { headers });
    expect(sync.status).toBe(200);
    const async = await postSigned(stack.url, 'getDataAsync', envelope(1001, [{ ico: '25596641' }]), {
      headers,
    });
    expect(async.status).toBe(200);
    expect(await traceOf(journalId(sync))).toBe(caller.traceId);
    expect(await traceOf(journalId(async))).toBe(caller.traceId);
    const both = [journalId(sync), journalId(async)].sort((a, b) => a - b);
    expect(await journalsOf(caller.traceId)).toEqual(both);
    // The integrator finds them too, through the Data API (its tenant's rows only).
    const condition = encodeURIComponent(`TRACE_ID = '${caller.traceId}'`);
    const read = await fetch(
      `${stack.url}/demo/JsonAPI/Data/getDataWithCondition/SVC_JOURNAL?condition=${condition}`,
      { headers: { authorization: DEMO_AUTH } },
    );
    expect(read.status).toBe(200);
    const found = ((await read.json()) as { SVC_JOURNAL: { JOURNAL_ID: number }[] }).SVC_JOURNAL;
    expect(found.map((row) => row.JOURNAL_ID).sort((a, b) => a - b)).toEqual(both);
  });

  it('keeps the trace the service started for a call that brought none, the one its answer names', async () => {
    const untraced = await postSigned(stack.url, 'getData', envelope(1001, [{ ico: '25596642' }]));
    expect(untraced.status).toBe(200);
    expect(await traceOf(journalId(untraced))).toBe(answerTraceId(untraced));
  });
});
