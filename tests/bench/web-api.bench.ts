import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createEmbeddedWebApiStore } from '../../shared/adapters/embedded/web-api-store.js';
import { createMssqlWebApiStore } from '../../shared/adapters/mssql/web-api-store.js';
import { byDialect } from '../../shared/config/databases.js';
import { getData, getDataOnce, type WebApiContext } from '../../shared/core/web-api/calls.js';
import { validateEnvelope } from '../../shared/core/web-api/envelope.js';
import { signatureHeader, verifySignature } from '../../shared/core/web-api/signature.js';
import { tenantIdempotencyStore } from '../../shared/lambda/idempotency.js';
import { tenantWebApiStore } from '../../shared/lambda/web-api/store.js';
import { DEMO_WEB_API_TENANT } from '../support/web-api.js';
import { demoPolicy } from '../support/web-api-core.js';
import {
  figureNaming,
  median,
  type OtherDatabase,
  record,
  report,
  sample,
  sampleInterleaved,
} from './measure.js';

const HASH = 'demo-api-hash';
const AUTH = `Basic ${Buffer.from('demo:demo-password').toString('base64')}`;
const PROCEDURE = {
  embedded: 'SELECT * FROM "dbo"."WS_OP_UCET_SEARCH"($1::jsonb)',
  mssql: 'EXEC dbo.WS_OP_UCET_SEARCH @params = @p1',
};

/**
 * Operation 7 (three accounts) four ways: the bare procedure call on the database (the baseline),
 * the getData use case in-process (key lookup, signature check, replay guard, operation lookup,
 * journal write around the same call), getData over HTTP on the local stack, and getDataAsync
 * over HTTP (against getData over HTTP). On the embedded database with goals; tsql.bench.ts runs
 * the same on the T-SQL engine (`on` names it, and its figures carry no goal).
 */
export default async function webApiBench(): Promise<void> {
  // Latency, not fair share: the tenant's requests per second (50 by default) out of the way.
  const stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: { TENANT_REQUESTS_PER_SECOND: '10000' },
  });
  try {
    await webApiFigures(stack);
  } finally {
    await stack.stop();
  }
}

export async function webApiFigures(stack: LocalStack, on?: OtherDatabase): Promise<void> {
  const { goal, id, label } = figureNaming(on);
  const runs = 200;
  const db = stack.database;
  const store = byDialect(db, {
    mssql: (mssql) => createMssqlWebApiStore(mssql, 'demo'),
    embedded: (embedded) => createEmbeddedWebApiStore(embedded, 'demo'),
  });
  let n = 0;
  // Every call differs (an extra parameter the procedure ignores), so none is a replay.
  const nextBody = () => Buffer.from(JSON.stringify({ vltyp: 7, params: [{ kod_uctu: '21', n: n++ }] }));

  const bare = await sample(async () => {
    const rows = await db.query(PROCEDURE[db.dialect.name], [JSON.stringify([{ kod_uctu: '21', n: n++ }])]);
    if (rows.length !== 3) throw new Error('unexpected rows');
  }, runs);

  // The use case as the Lambda runs it: the store's lookups cached for WEB_API_CACHE_SECONDS.
  const ctx: WebApiContext = {
    keys: tenantIdempotencyStore(db, { id: 'demo' }),
    store: tenantWebApiStore(db, DEMO_WEB_API_TENANT),
    tenant: 'demo',
    policy: demoPolicy,
    requestId: 'bench',
  };
  const useCase = await sample(async () => {
    const body = nextBody();
    const result = await getData(ctx, {
      apiKey: 'demo-api-key',
      signature: signatureHeader(HASH, body),
      body,
      decode: () => validateEnvelope(JSON.parse(body.toString('utf8'))),
    });
    if (result.answer.data.length !== 3) throw new Error('unexpected rows');
  }, runs);
  report(
    label('getData use case in-process (signature, replay guard, journal)'),
    useCase,
    'bare procedure call',
    bare,
    { id: id('webApi.useCaseVsBareProcedure') },
  );

  // Exactly once in-process (CONTRACT 5a): the demo's writing operation 2001 under a key (its
  // hold, the record read under it, the answer recorded in the operation's transaction) against
  // the same call without one, in alternation; then a retry under a key (its record read and
  // answered) against the call. The service's own cost, without the local stack's HTTP emulation.
  const documentBody = () =>
    Buffer.from(
      JSON.stringify({
        vltyp: 2001,
        params: [{ cislo: `U${process.pid}-${n++}`, subject_id: 1, castka: 10 }],
      }),
    );
  const callOf = (body: Buffer) => ({
    apiKey: 'demo-api-key',
    signature: signatureHeader(HASH, body, Math.floor(Date.now() / 1000) - (n++ % 100)),
    body,
    decode: () => validateEnvelope(JSON.parse(body.toString('utf8'))),
  });
  const keyedCtx = (key: string): WebApiContext => ({
    ...ctx,
    idempotency: {
      header: key,
      retentionHours: 24,
      recordAnswer: async (result) => ({
        status: 200,
        contentType: 'application/json; charset=utf-8',
        body: Buffer.from(JSON.stringify(result.answer)),
      }),
    },
  });
  const ran = (answer: { result?: unknown; recorded?: unknown }) => {
    if (!answer.result && !answer.recorded) throw new Error('no answer');
  };
  const [keyedInProcess, unkeyedInProcess] = await sampleInterleaved(
    async () => ran(await getDataOnce(keyedCtx(`bench-in-${n++}`), callOf(documentBody()))),
    async () => ran(await getDataOnce(ctx, callOf(documentBody()))),
    runs,
  );
  report(
    label('getData of 2001 under an Idempotency-Key, in-process'),
    keyedInProcess,
    'the same call without a key, in-process',
    unkeyedInProcess,
    { id: id('webApi.keyedUseCaseVsUseCase'), goal: goal(1.1) },
  );
  const firstBody = documentBody();
  const inProcessKey = `bench-in-replay-${process.pid}`;
  ran(await getDataOnce(keyedCtx(inProcessKey), callOf(firstBody)));
  const [replayInProcess, callInProcess] = await sampleInterleaved(
    async () => {
      const answer = await getDataOnce(keyedCtx(inProcessKey), callOf(firstBody));
      if (!answer.replayed) throw new Error('not a replay');
    },
    async () => ran(await getDataOnce(ctx, callOf(documentBody()))),
    runs,
  );
  report(
    label('a retry under its Idempotency-Key (the recorded answer), in-process'),
    replayInProcess,
    'the call of 2001 itself, in-process',
    callInProcess,
    { id: id('webApi.replayUseCaseVsUseCase'), goal: goal(0.5) },
  );

  // The parts on their own.
  const body = nextBody();
  const header = signatureHeader(HASH, body);
  const now = Math.floor(Date.now() / 1000);
  const signature = await sample(async () => verifySignature(header, HASH, body, now, 300), runs * 10);
  const journal = await sample(async () => {
    const id = await store.openJournal({
      applicationId: 1,
      vltyp: 7,
      mode: 'sync',
      request: body.toString(),
      requestId: 'bench',
    });
    await store.finishJournal(id, { state: 'finished', answer: '{}', vlResult: 1, rowName: 'Ucet' });
  }, runs);
  const replay = await sample(async () => store.claimRequest(1, `${n++}`.padStart(64, '0'), 300), runs);
  const lookups = await sample(
    async () => Promise.all([store.findApplication('demo-api-key'), store.findOperation(7)]),
    runs,
  );
  console.log(
    `  of which: signature check ${(median(signature) * 1000).toFixed(1)} µs, ` +
      `replay guard ${median(replay).toFixed(2)} ms, journal open + finish ${median(journal).toFixed(2)} ms, ` +
      `key + operation lookups ${median(lookups).toFixed(2)} ms (bare call ${median(bare).toFixed(2)} ms)`,
  );

  /** Posts `payload`, signed, to the local stack and returns the answer. */
  const postSigned = async (
    call: 'getData' | 'getDataAsync',
    payload: Buffer,
    headers: Record<string, string> = {},
  ) => {
    const response = await fetch(`${stack.url}/demo/WebAPI/${call}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'demo-api-key',
        // A time stamp of its own per call: the same body re-signed is a retry, not a replay.
        'x-svc-signature': signatureHeader(HASH, payload, Math.floor(Date.now() / 1000) - (n++ % 100)),
        ...headers,
      },
      body: payload,
    });
    return (await response.json()) as { vlResult: number; data: unknown[] };
  };
  const post = (call: 'getData' | 'getDataAsync') => postSigned(call, nextBody());

  // The goal: a signed lookup (operation 1001, subjects whose name contains "alfa") against the
  // same lookup as a Data API read, both over HTTP, in alternation.
  const condition = encodeURIComponent(`NAZEV LIKE '%alfa%'`);
  const [signed, dataRead] = await sampleInterleaved(
    async () => {
      const answer = await postSigned(
        'getData',
        Buffer.from(JSON.stringify({ vltyp: 1001, params: [{ nazev: 'alfa', n: n++ }] })),
      );
      if (answer.vlResult !== 1 || answer.data.length !== 1)
        throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
    },
    async () => {
      const response = await fetch(
        `${stack.url}/demo/JsonAPI/Data/getDataWithCondition/SUBJECT?condition=${condition}`,
        { headers: { authorization: AUTH } },
      );
      const body = (await response.json()) as { SUBJECT: unknown[] };
      if (body.SUBJECT.length !== 1) throw new Error('unexpected rows');
    },
    runs,
  );
  report(
    label('signed Web API getData (vltyp 1001, nazev "alfa") over HTTP'),
    signed,
    "Data API getDataWithCondition on SUBJECT (NAZEV LIKE '%alfa%') over HTTP",
    dataRead,
    { id: id('webApi.signedCallVsDataRead'), goal: goal(1.3) },
  );

  const http = await sample(async () => {
    const answer = await post('getData');
    if (answer.data.length !== 3) throw new Error('unexpected rows');
  }, runs);
  report(label('getData over HTTP (local stack)'), http, 'bare procedure call', bare, {
    id: id('webApi.signedCallVsBareProcedure'),
  });

  // Exactly once (CONTRACT 5a): the demo's writing operation 2001 under an Idempotency-Key (the
  // key held by its transaction, its answer recorded with the DOKUMENT) against the same call
  // without one, in alternation; then a retry under a key, answered from its record, against
  // the call itself.
  const document = () =>
    Buffer.from(
      JSON.stringify({
        vltyp: 2001,
        params: [{ cislo: `B${process.pid}-${n++}`, subject_id: 1, castka: 10 }],
      }),
    );
  const created = (answer: { vlResult: number; data: unknown[] }) => {
    if (answer.vlResult !== 1 || answer.data.length !== 1) throw new Error('unexpected answer');
  };
  const [keyed, unkeyed] = await sampleInterleaved(
    async () => created(await postSigned('getData', document(), { 'idempotency-key': `bench-${n++}` })),
    async () => created(await postSigned('getData', document())),
    runs,
  );
  report(
    label('getData of 2001 under an Idempotency-Key over HTTP'),
    keyed,
    'the same call without a key',
    unkeyed,
    {
      id: id('webApi.keyedCallVsCall'),
      goal: goal(1.1),
    },
  );
  const recorded = document();
  const key = `bench-replay-${process.pid}`;
  created(await postSigned('getData', recorded, { 'idempotency-key': key }));
  const [replayed, call] = await sampleInterleaved(
    async () => created(await postSigned('getData', recorded, { 'idempotency-key': key })),
    async () => created(await postSigned('getData', document())),
    runs,
  );
  report(
    label('a retry under its Idempotency-Key (the recorded answer) over HTTP'),
    replayed,
    'the call of 2001 itself',
    call,
    {
      id: id('webApi.replayVsCall'),
      goal: goal(0.5),
    },
  );

  // The asynchronous path for the same fast operation: journal, SQS send, worker, journal
  // polling; in alternation with the synchronous call.
  const [async, sync] = await sampleInterleaved(
    async () => {
      const answer = await post('getDataAsync');
      if (answer.vlResult !== 1 || answer.data.length !== 3) throw new Error('unexpected answer');
    },
    async () => {
      const answer = await post('getData');
      if (answer.data.length !== 3) throw new Error('unexpected rows');
    },
    runs / 2,
  );
  record({
    id: id('webApi.asyncExtraLatency'),
    subject: label('getDataAsync over HTTP (local stack, SQS emulator, worker)'),
    baseline: 'getData over HTTP',
    unit: 'ms',
    subjectMedian: median(async),
    baselineMedian: median(sync),
    value: median(async) - median(sync),
    kind: 'difference',
    goal: goal(20),
  });
}
